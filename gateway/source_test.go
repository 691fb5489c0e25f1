package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Source networks through the public handler, on the demo's SQLite and
// in-process Redis, with peers and headers as a load balancer would send.
func TestSourceNetworks(t *testing.T) {
	t.Parallel()
	proxies, _ := authz.ParseNetworks("10.0.0.0/8")
	g := newLocalGateway(t, func(c *Config) { c.TrustedProxies = proxies })
	co := gendata.DemoCompanyA
	key := func(scopes string, cidrs ...string) string {
		return g.newKey(t, co, invoicing.Live, scopes, "test", cidrs...)
	}
	office := key(allScopesLocal, "203.0.113.0/24", "2001:db8::/32")
	officeReadOnly := key("clients:read", "203.0.113.0/24")
	anywhere := key(allScopesLocal)
	get := func(secret, company, peer string, xff ...string) (int, string) {
		r := httptest.NewRequest(http.MethodGet, apiPrefix+"/invoices", nil)
		r.RemoteAddr = peer
		r.Header.Set("Authorization", "Bearer "+secret)
		r.Header.Set("X-Company-Id", company)
		for _, v := range xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		w := httptest.NewRecorder()
		g.h.ServeHTTP(w, r)
		var p struct{ Code string }
		_ = json.Unmarshal(w.Body.Bytes(), &p)
		return w.Code, p.Code
	}
	for _, c := range []struct {
		name, secret, company, peer string
		xff                         []string
		status                      int
		code                        string
	}{
		{"from the office", office, co, "203.0.113.9:4000", nil, 200, ""},
		{"from the office over IPv6", office, co, "[2001:db8::77]:4000", nil, 200, ""},
		{"from elsewhere", office, co, "198.51.100.1:4000", nil, 403, "source_not_allowed"},
		{"elsewhere, claiming the office", office, co, "198.51.100.1:4000", []string{"203.0.113.9"}, 403, "source_not_allowed"},
		{"via the load balancer from the office", office, co, "10.0.0.5:80", []string{"203.0.113.9"}, 200, ""},
		{"via the load balancer from elsewhere", office, co, "10.0.0.5:80", []string{"203.0.113.9, 198.51.100.1"}, 403, "source_not_allowed"},
		{"via the load balancer, unknown source", office, co, "10.0.0.5:80", []string{"unknown"}, 403, "source_not_allowed"},
		{"the load balancer itself", office, co, "10.0.0.5:80", nil, 403, "source_not_allowed"},
		{"a key without networks, from anywhere", anywhere, co, "198.51.100.1:4000", nil, 200, ""},
		{"elsewhere and another company: the company is told first", office, gendata.DemoCompanyB, "198.51.100.1:4000", nil, 403, "company_mismatch"},
		{"elsewhere and no scope: the network is told first", officeReadOnly, co, "198.51.100.1:4000", nil, 403, "source_not_allowed"},
		{"from the office without the scope", officeReadOnly, co, "203.0.113.1:4000", nil, 403, "insufficient_scope"},
	} {
		status, code := get(c.secret, c.company, c.peer, c.xff...)
		if status != c.status || code != c.code {
			t.Errorf("%s: %d %q, want %d %q", c.name, status, code, c.status, c.code)
		}
	}
}

const allScopesLocal = "invoices:read,clients:read,clients:write"
