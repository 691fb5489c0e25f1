package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The client address rule: the peer, or, behind trusted proxies, the
// right-most X-Forwarded-For entry that is not a trusted proxy.
func TestClientAddr(t *testing.T) {
	trusted, err := ParseTrustedProxies("10.0.0.0/8, 2001:db8:ffff::/48,192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		peer   string
		xff    []string
		want   string // "" means unknown
		noProx bool   // judge without trusted proxies
	}{
		{"untrusted peer", "203.0.113.7:5100", nil, "203.0.113.7", false},
		{"untrusted peer's header is ignored", "203.0.113.7:5100", []string{"198.51.100.1"}, "203.0.113.7", false},
		{"no proxies configured: header ignored", "10.1.1.1:80", []string{"198.51.100.1"}, "10.1.1.1", true},
		{"trusted peer, one entry", "10.1.1.1:80", []string{"198.51.100.1"}, "198.51.100.1", false},
		{"right-most untrusted entry", "10.1.1.1:80", []string{"6.6.6.6, 198.51.100.1"}, "198.51.100.1", false},
		{"client-sent entries to the left are skipped", "10.1.1.1:80", []string{"6.6.6.6,7.7.7.7", "198.51.100.1"}, "198.51.100.1", false},
		{"trusted hops are skipped", "10.1.1.1:80", []string{"198.51.100.1, 10.2.2.2", "192.0.2.1"}, "198.51.100.1", false},
		{"every hop trusted: the left-most", "10.1.1.1:80", []string{"10.3.3.3, 10.2.2.2"}, "10.3.3.3", false},
		{"trusted peer without header", "10.1.1.1:80", nil, "10.1.1.1", false},
		{"entry with a port", "10.1.1.1:80", []string{"198.51.100.1:4711"}, "198.51.100.1", false},
		{"IPv6 entry with a port", "10.1.1.1:80", []string{"[2001:db8::5]:443"}, "2001:db8::5", false},
		{"IPv6 trusted peer", "[2001:db8:ffff::9]:443", []string{"2001:db8::5"}, "2001:db8::5", false},
		{"IPv4-mapped peer", "[::ffff:203.0.113.7]:5100", nil, "203.0.113.7", false},
		{"IPv4-mapped trusted peer", "[::ffff:10.1.1.1]:5100", []string{"198.51.100.1"}, "198.51.100.1", false},
		{"garbage entry: unknown", "10.1.1.1:80", []string{"unknown"}, "", false},
		{"empty entry: unknown", "10.1.1.1:80", []string{"198.51.100.1,"}, "", false},
		{"garbage left of the client is never read", "10.1.1.1:80", []string{"garbage, 198.51.100.1"}, "198.51.100.1", false},
		{"garbage peer", "pipe", nil, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := trusted
			if c.noProx {
				tr = nil
			}
			got, ok := clientAddr(c.peer, c.xff, tr)
			if c.want == "" {
				if ok {
					t.Fatalf("clientAddr = %v, want unknown", got)
				}
				return
			}
			if !ok || got != netip.MustParseAddr(c.want) {
				t.Fatalf("clientAddr = %v, %v; want %s", got, ok, c.want)
			}
		})
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.local", "10.0.0.0/8;10.1.0.0/16"} {
		if _, err := ParseTrustedProxies(bad); err == nil {
			t.Errorf("ParseTrustedProxies(%q) accepted", bad)
		}
	}
	if p, err := ParseTrustedProxies(" "); err != nil || len(p) != 0 {
		t.Errorf("empty setting = %v, %v", p, err)
	}
}

// Source networks through the public handler, on the demo's SQLite and
// in-process Redis, with peers and headers as a load balancer would send.
func TestSourceNetworks(t *testing.T) {
	proxies, _ := ParseTrustedProxies("10.0.0.0/8")
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
