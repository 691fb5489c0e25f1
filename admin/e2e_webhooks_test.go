package admin_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/client"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The platform's dashboard manages a company's webhook endpoints through
// the admin API; a client created through the public API then reaches the
// integrator's receiver as client.created, verified by the Go client, with
// the client as GET answers it; every change is in the audit log with its
// actor; bad input changes nothing.
func TestWebhooksThroughTheAdminAPI(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	recv := newReceiver(t)
	auth := map[string]string{"Authorization": "Bearer " + in.adminToken, "X-Actor": "ana@platform"}
	hooks := "/admin/v1/companies/" + coA + "/webhooks"
	h := &hookAPI{t: t, in: in, recv: recv, auth: auth, hooks: hooks}
	h.badInput()
	h.create()
	h.clientCreated()
	h.testReplayRecover()
	h.changeRotateDelete()
	h.audited()
}

// hookAPI is TestWebhooksThroughTheAdminAPI's story, a step a method: what
// a step leaves for the next ones is in its fields.
type hookAPI struct {
	t     *testing.T
	in    *instance
	recv  *receiver
	auth  map[string]string // the admin token and an actor
	hooks string            // company A's endpoints

	id, secret string               // the endpoint made
	ev         *client.WebhookEvent // the client.created delivered
}

// post posts body to the admin API's path, as the actor.
func (h *hookAPI) post(path, body string) resp {
	return do(h.t, h.in.admin.URL, req{Method: "POST", Path: path, Body: body, Header: h.auth})
}

// badInput: bad input is a clear problem, and creates nothing.
func (h *hookAPI) badInput() {
	t, in, recv, auth, hooks := h.t, h.in, h.recv, h.auth, h.hooks
	for _, c := range []struct{ body, field string }{
		{`{"mode":"TEST","url":"https://10.0.0.7/hooks"}`, "private address"},
		{`{"mode":"TEST","url":"not a url"}`, "absolute URL"},
		{`{"mode":"TEST","url":"` + recv.srv.URL + `","types":["invoice.refunded"]}`, "invoice.refunded"},
		{`{"mode":"PROD","url":"` + recv.srv.URL + `"}`, "mode"},
		{`{"mode":"TEST"}`, "url"},
		{`{"mode":"TEST","url":"` + recv.srv.URL + `","secret":"mine"}`, "secret"},
	} {
		m := expectProblem(t, h.post(hooks, c.body), 400, "invalid_body")
		if !strings.Contains(strings.ToLower(string(mustJSON(t, m))), strings.ToLower(c.field)) {
			t.Errorf("%s: the problem does not name %q: %v", c.body, c.field, m)
		}
	}
	expectProblem(t, do(t, in.admin.URL, req{Method: "POST", Path: hooks, Body: `{"mode":"TEST","url":"` + recv.srv.URL + `"}`,
		Header: map[string]string{"Authorization": "Bearer " + in.adminToken}}), 400, "missing_actor") // no X-Actor
	expectProblem(t, h.post("/admin/v1/companies/0a5e7c1e-0000-4000-8000-0000000000ff/webhooks", `{"mode":"TEST","url":"`+recv.srv.URL+`"}`), 422, "unknown_company")
	if list := do(t, in.admin.URL, req{Path: hooks, Header: auth}).json(t)["data"].([]any); len(list) != 0 {
		t.Fatalf("refused creations left %d endpoints", len(list))
	}
}

// create makes a TEST endpoint for clients.
func (h *hookAPI) create() {
	t, in, recv, auth, hooks := h.t, h.in, h.recv, h.auth, h.hooks
	created := h.post(hooks, `{"mode":"TEST","url":"`+recv.srv.URL+`/hooks","types":["client.created"],"description":"ERP"}`)
	if created.Status != 201 {
		t.Fatalf("create: %d %s", created.Status, created.Body)
	}
	ep := created.json(t)
	secret, _ := ep["secret"].(string)
	id, _ := ep["id"].(string)
	if !strings.HasPrefix(secret, "whsec_") || created.Header.Get("Location") != "/admin/v1/webhooks/"+id || ep["enabled"] != true {
		t.Fatalf("created %s", created.Body)
	}
	recv.trust(t, secret)
	got := do(t, in.admin.URL, req{Path: "/admin/v1/webhooks/" + id, Header: auth})
	if got.Status != 200 || strings.Contains(string(got.Body), "whsec_") {
		t.Fatalf("get shows %d %s", got.Status, got.Body)
	}
	h.id, h.secret = id, secret
}

// clientCreated: a client created through the public API arrives as
// client.created.
func (h *hookAPI) clientCreated() {
	t, in, recv, auth, id := h.t, h.in, h.recv, h.auth, h.id
	in.runEvents(t)
	key := in.key(t, coA, invoicing.Test, allScopes)
	c := do(t, in.pub.URL, req{Method: "POST", Path: "/api/v1/v1/clients", Key: key.Key, Company: coA, Body: `{"name":"Cliente por Webhook"}`})
	if c.Status != 201 {
		t.Fatalf("create client: %d %s", c.Status, c.Body)
	}
	cid, _ := c.json(t)["id"].(string)
	ev := recv.wait(t, "client.created", cid)
	cl, err := ev.Client()
	if err != nil || cl.Name != "Cliente por Webhook" {
		t.Fatalf("event data: %+v, %v", cl, err)
	}
	api := do(t, in.pub.URL, req{Path: "/api/v1/v1/clients/" + cid, Key: key.Key, Company: coA})
	if strings.TrimSpace(string(api.Body)) != string(ev.Data) {
		t.Errorf("event data:\n%s\nGET answers:\n%s", ev.Data, api.Body)
	}
	deliveries := do(t, in.admin.URL, req{Path: "/admin/v1/webhooks/" + id + "/deliveries", Header: auth})
	if deliveries.Status != 200 || !strings.Contains(string(deliveries.Body), ev.ID) {
		t.Errorf("deliveries: %d %s", deliveries.Status, deliveries.Body)
	}
	h.ev = ev
}

// testReplayRecover sends a test delivery, a replay, a recovery.
func (h *hookAPI) testReplayRecover() {
	t, in, recv, auth, id, ev := h.t, h.in, h.recv, h.auth, h.id, h.ev
	tested := h.post("/admin/v1/webhooks/"+id+"/test", "")
	if tested.Status != 202 || tested.json(t)["type"] != "webhook.test" {
		t.Fatalf("test: %d %s", tested.Status, tested.Body)
	}
	if tev := recv.wait(t, "webhook.test", ""); tev.ID != tested.json(t)["eventId"] {
		t.Fatalf("test delivery %s, queued %v", tev.ID, tested.json(t)["eventId"])
	}
	replayed := h.post("/admin/v1/webhooks/"+id+"/deliveries/"+ev.ID+"/replay", "")
	if replayed.Status != 200 || replayed.json(t)["eventId"] != ev.ID {
		t.Fatalf("replay: %d %s", replayed.Status, replayed.Body)
	}
	testenv.Eventually(t, "the replayed event", func() error {
		if n := recv.count(ev.ID); n < 2 {
			return fmt.Errorf("arrived %d times, want twice", n)
		}
		return nil
	})
	expectProblem(t, h.post("/admin/v1/webhooks/"+id+"/deliveries/evt_aaaaaaaaaaaaaaaaaaaaaaaaaa/replay", ""), 404, "not_found")
	recovered := h.post("/admin/v1/webhooks/"+id+"/recover", `{"since":"`+time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)+`"}`)
	if v := recovered.json(t); recovered.Status != 200 || v["queued"] != 0.0 || v["failed"] != 0.0 || v["waiting"] != 0.0 {
		t.Fatalf("recover: %d %s", recovered.Status, recovered.Body)
	}
	expectProblem(t, h.post("/admin/v1/webhooks/"+id+"/recover", `{"since":"yesterday"}`), 400, "invalid_body")
	filtered := do(t, in.admin.URL, req{Path: "/admin/v1/webhooks/" + id + "/deliveries?state=delivered&type=webhook.test", Header: auth})
	if data := filtered.json(t)["data"].([]any); filtered.Status != 200 || len(data) != 1 {
		t.Fatalf("deliveries filtered: %d %s", filtered.Status, filtered.Body)
	}
	expectProblem(t, do(t, in.admin.URL, req{Path: "/admin/v1/webhooks/" + id + "/deliveries?state=lost", Header: auth}), 400, "invalid_parameter")
	expectProblem(t, do(t, in.admin.URL, req{Path: "/admin/v1/webhooks/" + id + "/deliveries?cursor=12:nope", Header: auth}), 400, "invalid_parameter")
}

// changeRotateDelete changes, rotates and deletes the endpoint.
func (h *hookAPI) changeRotateDelete() {
	t, in, auth, id, secret := h.t, h.in, h.auth, h.id, h.secret
	patched := do(t, in.admin.URL, req{Method: "PATCH", Path: "/admin/v1/webhooks/" + id, Body: `{"enabled":false,"types":null}`, Header: auth})
	if p := patched.json(t); patched.Status != 200 || p["enabled"] != false || len(p["types"].([]any)) != 0 {
		t.Fatalf("patch: %d %s", patched.Status, patched.Body)
	}
	rotated := h.post("/admin/v1/webhooks/"+id+"/rotate-secret", `{"overlapSeconds":3600}`)
	if r := rotated.json(t); rotated.Status != 201 || r["secret"] == secret || r["previousSecretUntil"] == nil {
		t.Fatalf("rotate: %d %s", rotated.Status, rotated.Body)
	}
	expectProblem(t, h.post("/admin/v1/webhooks/"+id+"/rotate-secret", `{"overlapSeconds":-1}`), 400, "invalid_body")
	if del := do(t, in.admin.URL, req{Method: "DELETE", Path: "/admin/v1/webhooks/" + id, Header: auth}); del.Status != 200 {
		t.Fatalf("delete: %d %s", del.Status, del.Body)
	}
	expectProblem(t, do(t, in.admin.URL, req{Path: "/admin/v1/webhooks/" + id, Header: auth}), 404, "not_found")
}

// audited: each change is recorded with its actor, and every delivery verified.
func (h *hookAPI) audited() {
	t, in, recv, auth, id := h.t, h.in, h.recv, h.auth, h.id
	log := do(t, in.admin.URL, req{Path: "/admin/v1/companies/" + coA + "/audit", Header: auth})
	var page struct {
		Data []struct {
			Action, Actor string
			WebhookID     *string `json:"webhookId"`
			After         json.RawMessage
		}
	}
	if err := json.Unmarshal(log.Body, &page); err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range page.Data {
		if e.WebhookID != nil && *e.WebhookID == id {
			actions = append(actions, e.Action)
			if e.Actor != "ana@platform" || strings.Contains(string(e.After), "whsec_") {
				t.Errorf("audit event %s: actor %q, after %s", e.Action, e.Actor, e.After)
			}
		}
	}
	if want := "webhook.created webhook.tested webhook.replayed webhook.recovered webhook.updated webhook.secret_rotated webhook.deleted"; strings.Join(actions, " ") != want {
		t.Errorf("audit actions %v, want %s", actions, want)
	}
	if refused := recv.refusals(); len(refused) != 0 {
		t.Errorf("deliveries that did not verify:\n%s", strings.Join(refused, "\n"))
	}
}

// At most 10 endpoints per company and mode: the 11th is a 409 that changes
// nothing.
func TestWebhookEndpointLimit(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	auth := map[string]string{"Authorization": "Bearer " + in.adminToken, "X-Actor": "ana@platform"}
	hooks := "/admin/v1/companies/" + coA + "/webhooks"
	for i := range 10 {
		if r := do(t, in.admin.URL, req{Method: "POST", Path: hooks, Body: `{"mode":"LIVE","url":"http://127.0.0.1:9/h"}`, Header: auth}); r.Status != 201 {
			t.Fatalf("endpoint %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	expectProblem(t, do(t, in.admin.URL, req{Method: "POST", Path: hooks, Body: `{"mode":"LIVE","url":"http://127.0.0.1:9/h"}`, Header: auth}), 409, "webhook_endpoint_limit_reached")
	if r := do(t, in.admin.URL, req{Method: "POST", Path: hooks, Body: `{"mode":"TEST","url":"http://127.0.0.1:9/h"}`, Header: auth}); r.Status != 201 {
		t.Fatalf("a TEST endpoint beside ten LIVE ones: %d %s", r.Status, r.Body)
	}
	if list := do(t, in.admin.URL, req{Path: hooks, Header: auth}).json(t)["data"].([]any); len(list) != 11 {
		t.Fatalf("%d endpoints, want 11", len(list))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
