package admin_test

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// Every answer of the admin listener, successes and errors alike, is
// private to its caller (Cache-Control: no-store) and never to be sniffed
// into another type (X-Content-Type-Options: nosniff), as the public
// listener's are (gateway's TestSecurityHeadersEverywhere).
func TestSecurityHeadersOnAdminListener(t *testing.T) {
	t.Parallel()
	in := newWorld(t).start()
	adm := in.adminH
	tok := map[string]string{"Authorization": "Bearer " + in.adminToken}
	for _, c := range []struct {
		method, path, ctype, body string
		hdr                       map[string]string
		status                    int
	}{
		{"GET", "/admin/v1/keys?companyId=" + coA, "", "", tok, 200},
		{"GET", "/admin/v1/keys?companyId=" + coA, "", "", nil, 401},
		{"GET", "/admin/v1/keys/key_aaaaaaaaaaaaaaaaaaaa", "", "", tok, 404},
		{"POST", "/admin/v1/keys", "application/json", `{"companyId":"` + coA + `","mode":"LIVE","scopes":["clients:read"]}`,
			map[string]string{"Authorization": "Bearer " + in.adminToken, "X-Actor": "ana@dashboard"}, 201},
		{"GET", "/admin/v1/companies/" + coA + "/limits", "", "", tok, 200},
		{"GET", "/admin/v1/nothing", "", "", tok, 404},
		{"GET", "/healthz", "", "", nil, 200},
		{"GET", "//attacker.example/healthz", "", "", nil, 421}, // DNS rebinding: another site's name
	} {
		target := "http://127.0.0.1" + c.path
		if strings.HasPrefix(c.path, "//") { // another host
			target = "http:" + c.path
		}
		r := httptest.NewRequest(c.method, target, strings.NewReader(c.body))
		if c.ctype != "" {
			r.Header.Set("Content-Type", c.ctype)
		}
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		adm.ServeHTTP(w, r)
		if w.Code != c.status {
			t.Errorf("%s %.60s: %d, want %d: %.200s", c.method, c.path, w.Code, c.status, w.Body)
		}
		hd := w.Header()
		if hd.Get("Cache-Control") != "no-store" || hd.Get("X-Content-Type-Options") != "nosniff" || hd.Get("X-Request-Id") == "" {
			t.Errorf("%s %.60s (%d): Cache-Control %q, X-Content-Type-Options %q", c.method, c.path, w.Code,
				hd.Get("Cache-Control"), hd.Get("X-Content-Type-Options"))
		}
	}
}
