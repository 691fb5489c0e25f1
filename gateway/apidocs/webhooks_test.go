package apidocs

import (
	"slices"
	"sort"
	"strings"
	"testing"
)

// eventTypes are the wire format's event types, each with the schema of
// its data (the resource as the API's GET answers it).
var eventTypes = map[string]string{
	"invoice.issued": "InvoiceDetail", "invoice.paid": "InvoiceDetail", "invoice.cancelled": "InvoiceDetail",
	"invoice.overdue": "InvoiceDetail", "invoice.transmission.updated": "InvoiceDetail",
	"client.created": "ClientRecord", "client.updated": "ClientRecord",
	"webhook.test": "", // no resource: its data is written out in the document
}

// The document describes every event's delivery as the gateway makes it:
// no API key, the three Standard Webhooks headers, a body of type (that
// event's), timestamp, companyId and mode (whose the event is: a UUID, LIVE
// or TEST) and data, an example of that event, and the answers that deliver
// or retry; the guide is listed with the others.
func TestWebhooksDescribeEveryEvent(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	doc := p.Document()
	hooks, _ := doc["webhooks"].(map[string]any)
	var names, want []string
	for n := range hooks {
		names = append(names, n)
	}
	for n := range eventTypes {
		want = append(want, n)
	}
	sort.Strings(names)
	sort.Strings(want)
	if !slices.Equal(names, want) {
		t.Fatalf("webhooks %v, want the event types %v", names, want)
	}
	for name, data := range eventTypes {
		op, _ := dig(hooks, name, "post").(map[string]any)
		if sec, ok := op["security"].([]any); !ok || len(sec) != 0 {
			t.Errorf("%s: security %v, want none (deliveries carry no API key)", name, op["security"])
		}
		var headers []string
		params, _ := op["parameters"].([]any)
		for _, pm := range params {
			if dig(pm, "in") == "header" && dig(pm, "required") == true {
				headers = append(headers, dig(pm, "name").(string))
			}
		}
		if !slices.Equal(headers, []string{"webhook-id", "webhook-timestamp", "webhook-signature"}) {
			t.Errorf("%s: required headers %v", name, headers)
		}
		body := dig(op, "requestBody", "content", "application/json")
		dataOK := dig(body, "schema", "properties", "data", "$ref") == "#/components/schemas/"+data
		if data == "" {
			dataOK = dig(body, "schema", "properties", "data", "type") == "object"
		}
		if dig(body, "schema", "properties", "type", "const") != name || !dataOK ||
			!slices.Equal(toStrings(dig(body, "schema", "required").([]any)), []string{"type", "timestamp", "companyId", "mode", "data"}) {
			t.Errorf("%s: body schema %v", name, dig(body, "schema"))
		}
		if dig(body, "schema", "properties", "companyId", "format") != "uuid" ||
			!slices.Equal(toStrings(dig(body, "schema", "properties", "mode", "enum").([]any)), []string{"LIVE", "TEST"}) {
			t.Errorf("%s: companyId %v, mode %v", name, dig(body, "schema", "properties", "companyId"), dig(body, "schema", "properties", "mode"))
		}
		exs, _ := dig(body, "examples").(map[string]any)
		for _, ex := range exs {
			ref, _ := dig(ex, "$ref").(string)
			v := dig(doc, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...)
			if dig(v, "value", "type") != name || dig(v, "value", "companyId") == nil || dig(v, "value", "mode") == nil {
				t.Errorf("%s: example %s is of type %v, company %v, mode %v", name, ref, dig(v, "value", "type"), dig(v, "value", "companyId"), dig(v, "value", "mode"))
			}
		}
		if len(exs) == 0 {
			t.Errorf("%s: no example", name)
		}
		if dig(op, "responses", "2XX") == nil || dig(op, "responses", "default") == nil {
			t.Errorf("%s: answers %v, want 2XX and default", name, dig(op, "responses"))
		}
	}
	desc, _ := dig(doc, "info", "description").(string)
	if dig(doc, "info", "x-guides", "webhooks") != "/api/docs#api/description/webhooks" || !strings.Contains(desc, "\n## Webhooks\n") {
		t.Error("the Webhooks guide is not in the description, or not listed in x-guides")
	}
}

// oapi-codegen (default settings) keeps only the components that paths
// reach and then writes webhook code that names the types it removed: a
// webhook may refer only to schemas and parameters the operations use.
func TestWebhooksUseOnlyComponentsOperationsReach(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	doc := p.Document()
	reached := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok && !reached[ref] {
				reached[ref] = true
				walk(dig(doc, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...))
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc["paths"])
	var check func(path string, v any)
	check = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			ref, _ := v["$ref"].(string)
			if (strings.HasPrefix(ref, "#/components/schemas/") || strings.HasPrefix(ref, "#/components/parameters/")) && !reached[ref] {
				t.Errorf("%s: %s is used by no operation", path, ref)
			}
			for k, e := range v {
				check(path+"/"+k, e)
			}
		case []any:
			for _, e := range v {
				check(path, e)
			}
		}
	}
	check("#/webhooks", doc["webhooks"])
	if !reached["#/components/schemas/InvoiceDetail"] || !reached["#/components/schemas/Timestamp"] {
		t.Fatal("the walk from the paths misses what they use")
	}
}
