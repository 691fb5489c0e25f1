package admin_test

import "testing"

// The admin API reads its bodies as the public API does: an unknown or
// repeated member does not hide the body's other mistakes; every error is
// answered at once, each naming its field, and nothing changes.
func TestAdminBodyErrorsAllAtOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	key := in.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys", Body: createKeyBody(coA, "")}).json(t)
	hook := in.adminCall(t, req{Method: "POST", Path: "/admin/v1/companies/" + coA + "/webhooks", Body: `{"mode":"TEST","url":"http://127.0.0.1:9/hooks"}`})
	if hook.Status != 201 {
		t.Fatalf("create a webhook endpoint: %d %s", hook.Status, hook.Body)
	}
	hookID := hook.json(t)["id"].(string)
	for _, c := range []struct {
		method, path, body string
		fields             []string
	}{
		{"POST", "/admin/v1/keys", `{"company":"` + coA + `","mode":"PROD","scopes":["clients:read"],"scopes":[]}`,
			[]string{"company", "scopes", "companyId", "mode"}},
		{"POST", "/admin/v1/keys/" + key["id"].(string) + "/roll", `{"overlap":60,"overlapSeconds":-1}`,
			[]string{"overlap", "overlapSeconds"}},
		{"PUT", "/admin/v1/companies/" + coA + "/limits", `{"mode":"LIVE","rate":"fast","burts":7}`,
			[]string{"burts", "rate", "burst"}},
		{"POST", "/admin/v1/companies/" + coA + "/webhooks", `{"mode":"TEST","secret":"mine","enabled":"yes"}`,
			[]string{"secret", "url", "enabled"}},
		{"POST", "/admin/v1/webhooks/" + hookID + "/recover", `{"since":"yesterday","sinse":"2026-03-10T00:00:00Z"}`,
			[]string{"sinse", "since"}},
		{"POST", "/admin/v1/webhooks/" + hookID + "/rotate-secret", `{"overlapSeconds":"60","overlap":60}`,
			[]string{"overlap", "overlapSeconds"}},
	} {
		r := in.adminCall(t, req{Method: c.method, Path: c.path, Body: c.body})
		p := expectProblem(t, r, 400, "invalid_body")
		got := map[string]bool{}
		for _, e := range p["errors"].([]any) {
			got[e.(map[string]any)["field"].(string)] = true
		}
		for _, f := range c.fields {
			if !got[f] {
				t.Errorf("%s %s %s: no error on %s among %s", c.method, c.path, c.body, f, r.Body)
			}
		}
	}
	if l := in.adminCall(t, req{Path: "/admin/v1/keys?companyId=" + coA}).json(t)["data"].([]any); len(l) != 1 {
		t.Errorf("%d keys after refused creates and rolls, want 1", len(l))
	}
	if l := in.adminCall(t, req{Path: "/admin/v1/companies/" + coA + "/webhooks"}).json(t)["data"].([]any); len(l) != 1 {
		t.Errorf("%d webhook endpoints after a refused create, want 1", len(l))
	}
}
