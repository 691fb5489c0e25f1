package apidocs

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// operations lists the document's operations in tag order, then path and
// method order (GET before POST), which is also the order they can chain in.
func operations(doc map[string]any) ([]operation, error) {
	tagOrder := map[string]int{}
	tags, _ := doc["tags"].([]any)
	for i, t := range tags {
		name, _ := t.(map[string]any)["name"].(string)
		tagOrder[name] = i
	}
	paths, _ := doc["paths"].(map[string]any)
	var ops []operation
	for path, pi := range paths {
		item, _ := pi.(map[string]any)
		for _, method := range []string{"get", "put", "post", "patch", "delete"} {
			o, ok := item[method].(map[string]any)
			if !ok {
				continue
			}
			op := operation{Method: strings.ToUpper(method), Path: path}
			op.ID, _ = o["operationId"].(string)
			op.Summary, _ = o["summary"].(string)
			op.Description, _ = o["description"].(string)
			if t, _ := o["tags"].([]any); len(t) > 0 {
				op.Tag, _ = t[0].(string)
			}
			params, _ := o["parameters"].([]any)
			for _, p := range params {
				pm, err := resolve(doc, p)
				if err != nil {
					return nil, err
				}
				op.Params = append(op.Params, pm)
			}
			if ex := dig(o, "requestBody", "content", "application/json", "examples"); ex != nil {
				exs, _ := ex.(map[string]any)
				names := make([]string, 0, len(exs))
				for n := range exs {
					names = append(names, n)
				}
				sort.Strings(names)
				v := dig(exs[names[0]], "value")
				b, err := json.MarshalIndent(v, "", "  ")
				if err != nil {
					return nil, err
				}
				op.Body = string(b)
			}
			responses, _ := dig(o, "responses").(map[string]any)
			for code := range responses {
				if strings.HasPrefix(code, "2") && (op.Success == "" || code < op.Success) {
					op.Success = code
				}
			}
			if op.ID == "" || op.Summary == "" || op.Tag == "" || op.Success == "" {
				return nil, fmt.Errorf("%s %s: operationId, summary, a tag and a 2xx response are required", op.Method, path)
			}
			ops = append(ops, op)
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		a, b := ops[i], ops[j]
		if tagOrder[a.Tag] != tagOrder[b.Tag] {
			return tagOrder[a.Tag] < tagOrder[b.Tag]
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Method < b.Method
	})
	return ops, nil
}

// resolve follows a local $ref ("#/components/...").
func resolve(doc map[string]any, v any) (map[string]any, error) {
	m, _ := v.(map[string]any)
	ref, ok := m["$ref"].(string)
	if !ok {
		return m, nil
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("unsupported $ref %q", ref)
	}
	r, ok := dig(doc, strings.Split(ref[2:], "/")...).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("dangling $ref %q", ref)
	}
	return r, nil
}

func tagDescription(doc map[string]any, tag string) string {
	tags, _ := doc["tags"].([]any)
	for _, t := range tags {
		m, _ := t.(map[string]any)
		if m["name"] == tag {
			s, _ := m["description"].(string)
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// pathVariables maps a path parameter to the collection variable that holds
// an id of the right kind.
var pathVariables = map[string]string{"getInvoice": "invoiceId", "getClient": "clientId"}
