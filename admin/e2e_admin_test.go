package admin_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// At most 10 active keys per company, on the admin API; revoking frees one.
func TestKeyLimit(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	admin := func(q req) resp {
		if q.Header == nil {
			q.Header = map[string]string{}
		}
		q.Header["Authorization"] = "Bearer " + in.adminToken
		q.Header["X-Actor"] = testActor
		return do(t, in.admin.URL, q)
	}
	body := `{"companyId":"` + coB + `","mode":"TEST","scopes":["clients:read"],"name":"k"}`
	var first string
	for i := 0; i < 10; i++ {
		r := admin(req{Method: "POST", Path: "/admin/v1/keys", Body: body})
		if r.Status != 201 {
			t.Fatalf("key %d: %d %s", i+1, r.Status, r.Body)
		}
		m := r.json(t)
		if !strings.HasPrefix(m["key"].(string), "igw_test_") || r.Header.Get("Location") == "" {
			t.Fatalf("created key: %s", r.Body)
		}
		if i == 0 {
			first = m["id"].(string)
		}
	}
	expectProblem(t, admin(req{Method: "POST", Path: "/admin/v1/keys", Body: body}), 409, "key_limit_reached")
	if r := admin(req{Method: "DELETE", Path: "/admin/v1/keys/" + first}); r.Status != 200 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	if r := admin(req{Method: "POST", Path: "/admin/v1/keys", Body: body}); r.Status != 201 {
		t.Fatalf("after revoking one: %d %s", r.Status, r.Body)
	}
	// Listing never shows a secret.
	r := admin(req{Path: "/admin/v1/keys?companyId=" + coB})
	if r.Status != 200 || strings.Contains(string(r.Body), `"key"`) || strings.Count(string(r.Body), `"id"`) != 11 {
		t.Fatalf("list: %d %s", r.Status, r.Body)
	}
	// Bad requests on the admin API.
	expectProblem(t, admin(req{Method: "POST", Path: "/admin/v1/keys", Body: `{"companyId":"` + coB + `","mode":"PROD","scopes":["x"]}`}), 400, "invalid_body")
	expectProblem(t, admin(req{Method: "POST", Path: "/admin/v1/keys", Body: `{"companyId":"00000000-0000-4000-8000-0000000000ff","mode":"LIVE","scopes":["clients:read"]}`}), 422, "unknown_company")
	// An unknown key is named in every call that can name one.
	for _, q := range []req{{Path: "/admin/v1/keys/key_nope"}, {Method: "DELETE", Path: "/admin/v1/keys/key_nope"}, {Method: "POST", Path: "/admin/v1/keys/key_nope/roll"}} {
		if m := expectProblem(t, admin(q), 404, "not_found"); m["detail"] != "No API key key_nope exists." {
			t.Errorf("%s %s: %v, want the key named", q.Method, q.Path, m["detail"])
		}
	}
	expectProblem(t, do(t, in.admin.URL, req{Path: "/admin/v1/keys?companyId=" + coB}), 401, "unauthorized_admin")
	// A token sent but wrong is told so, not told to send one.
	m := expectProblem(t, do(t, in.admin.URL, req{Path: "/admin/v1/keys?companyId=" + coB, Header: map[string]string{"Authorization": "Bearer wrong"}}), 401, "invalid_admin_token")
	if d, _ := m["detail"].(string); strings.Contains(d, "Send Authorization") || !strings.Contains(d, "not this gateway's") {
		t.Errorf("a wrong token's detail: %q", d)
	}
	// The admin API does not exist on the public listener.
	expectProblem(t, admin2public(t, in), 404, "route_not_found")
}

func admin2public(t *testing.T, in *instance) resp {
	return do(t, in.pub.URL, req{Path: "/admin/v1/keys?companyId=" + coB, Header: map[string]string{"Authorization": "Bearer " + in.adminToken}})
}

// The admin listener logs each request under its route's pattern: the
// metrics scrape as "GET /metrics", a key by id as its pattern, never the
// path (it holds ids) nor "unmatched".
func TestAdminRoutesLoggedByPattern(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	for path, route := range map[string]string{
		"/metrics":                        "GET /metrics",
		"/admin/v1/keys/key_nope":         "GET /admin/v1/keys/:id",
		"/admin/v1/keys?companyId=" + coA: "GET /admin/v1/keys",
		"/nothing":                        "unmatched",
	} {
		r := do(t, in.admin.URL, req{Path: path, Key: in.adminToken})
		if line := logLine(t, in, r.Header.Get("X-Request-Id")); line["route"] != route {
			t.Errorf("%s (%d) logged as route %v, want %q", path, r.Status, line["route"], route)
		}
	}
}

// The admin API exists only on the admin listener: every admin route, with
// every method and even with the right token, is an unknown route on the
// public listener; on the admin listener each needs the exact token.
func TestAdminAPIIsolated(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	routes := adminRoutes(t)
	if len(routes) < 8 {
		t.Fatalf("found %d admin routes in admin.go", len(routes))
	}
	good := "Bearer " + in.adminToken
	wrong := []string{"", "Bearer ", "Bearer x", "Bearer " + in.adminToken[:len(in.adminToken)-1], "Bearer " + in.adminToken + "x",
		"Bearer " + strings.ToUpper(in.adminToken), "Bearer " + strings.Repeat("a", len(in.adminToken)), "Bearer " + strings.Repeat(in.adminToken, 200),
		"Basic " + in.adminToken, in.adminToken}
	k := in.key(t, coA, invoicing.Live, allScopes)
	wrong = append(wrong, "Bearer "+k.Key)
	for _, rt := range routes {
		path := strings.NewReplacer(":id", keyOrCompany(rt[1], coA)).Replace(rt[1])
		for _, m := range []string{"GET", "POST", "PUT", "DELETE", "PATCH"} {
			r := do(t, in.pub.URL, req{Method: m, Path: path, Body: `{}`, Header: map[string]string{"Authorization": good}})
			expectProblem(t, r, 404, "route_not_found")
		}
		for _, h := range wrong {
			// A second apart: past ten, wrong tokens are throttled
			// (TestWrongAdminTokensThrottled).
			in.clock.Add(time.Second)
			q := req{Method: rt[0], Path: path, Header: map[string]string{}}
			if h != "" {
				q.Header["Authorization"] = h
			}
			code := "invalid_admin_token"
			if h == "" {
				code = "unauthorized_admin"
			}
			expectProblem(t, do(t, in.admin.URL, q), 401, code)
		}
		// The right token opens it (whatever the route then answers).
		q := req{Method: rt[0], Path: path, Header: map[string]string{"Authorization": good}}
		if rt[0] == "POST" || rt[0] == "PUT" {
			q.Body = `{}`
		}
		if r := do(t, in.admin.URL, q); r.Status == 401 || r.Status == 404 && r.json(t)["code"] == "route_not_found" {
			t.Errorf("%s %s with the admin token: %d %s", rt[0], path, r.Status, r.Body)
		}
	}
}

func keyOrCompany(pattern, company string) string {
	if strings.HasPrefix(pattern, "/admin/v1/keys") {
		return "key_aaaaaaaaaaaaaaaaaaaa"
	}
	if strings.HasPrefix(pattern, "/admin/v1/webhooks") {
		return "ep_aaaaaaaaaaaaaaaaaaaaaaaaaa"
	}
	return company
}

// adminRoutes reads the admin routes from admin.go, so that a route added
// there is covered here without editing this test.
func adminRoutes(t *testing.T) [][2]string {
	src, err := os.ReadFile("admin.go")
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, m := range regexp.MustCompile(`s\.adminRoute\(rt, http\.Method(Get|Post|Put|Delete|Patch), "(/admin/[^"]+)"`).FindAllStringSubmatch(string(src), -1) {
		m[1] = strings.ToUpper(m[1])
		out = append(out, [2]string{m[1], m[2]})
	}
	return out
}
