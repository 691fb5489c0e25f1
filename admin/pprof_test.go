package admin_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Runtime profiles are served on the admin listener to the admin token only,
// never on the public listener, and never the command line.
func TestAdminPprof(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	get := func(base, path, token string) (int, string) {
		t.Helper()
		r, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get(in.admin.URL, "/debug/pprof/goroutine?debug=1", in.adminToken); code != 200 || !strings.Contains(body, "goroutine profile:") {
		t.Fatalf("goroutine profile with the token: %d %.200s", code, body)
	}
	if code, body := get(in.admin.URL, "/debug/pprof/", in.adminToken); code != 200 || !strings.Contains(body, "heap") {
		t.Fatalf("index with the token: %d %.200s", code, body)
	}
	if code, body := get(in.admin.URL, "/debug/pprof/profile?seconds=1", in.adminToken); code != 200 || len(body) == 0 {
		t.Fatalf("CPU profile with the token: %d %.200s", code, body)
	}
	for _, c := range []struct{ base, path, token, code string }{
		{in.admin.URL, "/debug/pprof/heap", "", "unauthorized_admin"},
		{in.admin.URL, "/debug/pprof/heap", "wrong", "invalid_admin_token"},
		{in.admin.URL, "/debug/pprof/cmdline", in.adminToken, "route_not_found"},
		{in.pub.URL, "/debug/pprof/heap", in.adminToken, "route_not_found"},
	} {
		if code, body := get(c.base, c.path, c.token); code < 400 || !strings.Contains(body, `"code":"`+c.code+`"`) {
			t.Errorf("%s with token %q: %d %.200s, want %s", c.path, c.token, code, body, c.code)
		}
	}
}
