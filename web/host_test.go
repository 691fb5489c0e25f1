package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/invoicing-ao/gateway/invoicing"
)

// A listener with HostCheck (the admin listener) answers requests for its
// addresses, loopback names and the configured names, on every route, and
// refuses any other name (a DNS-rebinding page's) with 421 before any
// route; a listener without it (the public one) does not look.
func TestListenerHost(t *testing.T) {
	names, err := invoicing.ParseHosts(" gw-admin.internal , Invoicing-Gateway-Admin.svc. ,")
	if err != nil {
		t.Fatal(err)
	}
	routes := func(rt *Router) {
		for _, path := range []string{"/healthz", "/metrics", "/admin/v1/keys"} {
			rt.Handle(http.MethodGet, path, func(*http.Request, Params) (Answer, error) { return Answer{Body: "ok"}, nil })
		}
	}
	adm := httptest.NewServer(Listener(Config{HostCheck: true, Hosts: names}, routes))
	pub := httptest.NewServer(Listener(Config{}, routes))
	defer adm.Close()
	defer pub.Close()
	for host, ok := range map[string]bool{
		"127.0.0.1:8081": true, "[::1]:8081": true, "10.1.2.3:8081": true, "[fd00::7]": true, "10.1.2.3": true,
		"localhost:8081": true, "LOCALHOST": true, "console.localhost:8081": true,
		"gw-admin.internal:8081": true, "GW-ADMIN.INTERNAL.": true, "invoicing-gateway-admin.svc": true,
		"attacker.example:8081": false, "attacker.example": false, "gw-admin.internal.attacker.example": false,
		"localhost.attacker.example": false, "127.0.0.1.nip.io:8081": false, "gw-admin": false,
	} {
		for _, path := range []string{"/healthz", "/metrics", "/admin/v1/keys"} {
			r, _ := http.NewRequest(http.MethodGet, adm.URL+path, nil)
			r.Host = host
			res, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			var p struct{ Code string }
			_ = json.NewDecoder(res.Body).Decode(&p)
			res.Body.Close()
			if refused := res.StatusCode == http.StatusMisdirectedRequest && p.Code == "host_not_allowed"; refused == ok {
				t.Errorf("Host %s, %s: %d %s", host, path, res.StatusCode, p.Code)
			}
		}
	}
	r, _ := http.NewRequest(http.MethodGet, pub.URL+"/healthz", nil)
	r.Host = "attacker.example"
	if res, err := http.DefaultClient.Do(r); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("public listener, another Host: %v %v", res, err)
	}
}
