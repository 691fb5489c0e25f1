package gateway_test

import (
	"net/netip"
	"strings"
	"testing"
)

// adminCall sends q to the instance's admin API as the dashboard does, with
// the token and, unless the header is set, the actor.
func (in *instance) adminCall(t *testing.T, q req) resp {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + in.adminToken, "X-Actor": "ana@dashboard"}
	for k, v := range q.Header {
		h[k] = v
	}
	q.Header = h
	return do(t, in.admin.URL, q)
}

func createKeyBody(company, extra string) string {
	return `{"companyId":"` + company + `","mode":"LIVE","scopes":["clients:read"],"name":"k"` + extra + `}`
}

// Over a real connection the peer is 127.0.0.1; behind a trusted proxy
// (here the loopback) the forwarded address decides.
func TestSourceNetworksOverTCP(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	direct := w.start()
	proxied := w.start(withTrustedProxies(netip.MustParsePrefix("127.0.0.0/8")))
	mk := func(cidr string) string {
		r := direct.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys", Body: createKeyBody(coA, `,"allowedCidrs":["`+cidr+`"]`)})
		if r.Status != 201 {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		return r.json(t)["key"].(string)
	}
	loop, office := mk("127.0.0.1"), mk("203.0.113.0/24")
	call := func(in *instance, key, xff string) resp {
		q := req{Path: "/api/v1/v1/clients", Key: key, Company: coA}
		if xff != "" {
			q.Header = map[string]string{"X-Forwarded-For": xff}
		}
		return do(t, in.pub.URL, q)
	}
	if r := call(direct, loop, ""); r.Status != 200 {
		t.Errorf("loopback key from the loopback: %d %s", r.Status, r.Body)
	}
	expectProblem(t, call(direct, office, ""), 403, "source_not_allowed")
	expectProblem(t, call(direct, office, "203.0.113.5"), 403, "source_not_allowed") // no proxy trusted
	if r := call(proxied, office, "203.0.113.5"); r.Status != 200 {
		t.Errorf("office key forwarded from the office: %d %s", r.Status, r.Body)
	}
	expectProblem(t, call(proxied, office, "203.0.113.5, 198.51.100.1"), 403, "source_not_allowed")
	// Bad networks are refused, naming the field.
	for _, bad := range []string{`["10.0.0.0/33"]`, `"10.0.0.0/8"`, `["` + strings.Repeat(`10.0.0.0/8","`, 20) + `10.0.0.0/8"]`} {
		r := direct.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys", Body: createKeyBody(coB, `,"allowedCidrs":`+bad)})
		expectProblem(t, r, 400, "invalid_body")
		if !strings.Contains(string(r.Body), `"field":"allowedCidrs"`) {
			t.Errorf("%s: %s", bad, r.Body)
		}
	}
}
