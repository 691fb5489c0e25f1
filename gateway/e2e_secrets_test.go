package gateway_test

// Secrets: after a run of ordinary and hostile requests, nothing the run
// captured — access logs, spans, metrics, error bodies, response headers,
// admin listings — holds a key secret, the admin token or the personal data
// sent in request bodies. (The admin API only on its own listener, only
// with its token: admin's TestAdminAPIIsolated.)

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// capture is everything a run showed to the outside, by kind.
type capture struct {
	errorBodies, headers, adminViews, successBodies []string
}

func (c *capture) add(r resp) resp {
	for k, vs := range r.Header {
		c.headers = append(c.headers, k+": "+strings.Join(vs, ", "))
	}
	if r.Status >= 400 {
		c.errorBodies = append(c.errorBodies, string(r.Body))
	} else {
		c.successBodies = append(c.successBodies, string(r.Body))
	}
	return r
}

func TestNoSecretOrPersonalDataLeaks(t *testing.T) {
	// Not parallel: it sets otel's global tracer provider.
	// The gateway, authz and tenants trace through otel's global provider
	// unless given one. Shut down at the end, it records nothing more, even
	// through the default provider, which delegates to the first one set.
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prev)
		_ = tp.Shutdown(context.Background())
	})

	w := newWorld(t)
	in := w.start()
	pub, adm := in.pub.URL, in.admin.URL
	var c capture
	admin := func(q req) resp {
		if q.Header == nil {
			q.Header = map[string]string{}
		}
		q.Header["Authorization"] = "Bearer " + in.adminToken
		q.Header["X-Actor"] = testActor
		return c.add(do(t, adm, q))
	}

	// Keys are made through the admin API, as the dashboard does: the
	// creation answer is the one place a secret may appear.
	var secrets []string
	keyIDs := map[string]string{}
	for _, body := range []string{
		`{"companyId":"` + coA + `","mode":"LIVE","scopes":["invoices:read","clients:read","clients:write"],"name":"a live"}`,
		`{"companyId":"` + coA + `","mode":"TEST","scopes":["clients:read","clients:write"],"name":"a test"}`,
		`{"companyId":"` + coB + `","mode":"LIVE","scopes":["clients:read"],"name":"b live"}`,
		`{"companyId":"` + coA + `","mode":"LIVE","scopes":["clients:read"],"name":"to revoke"}`,
	} {
		r := do(t, adm, req{Method: "POST", Path: "/admin/v1/keys", Body: body, Header: map[string]string{"Authorization": "Bearer " + in.adminToken, "X-Actor": testActor}})
		m := r.json(t)
		if r.Status != 201 {
			t.Fatalf("create key: %d %s", r.Status, r.Body)
		}
		secrets = append(secrets, m["key"].(string))
		keyIDs[m["key"].(string)] = m["id"].(string)
		for k, vs := range r.Header {
			c.headers = append(c.headers, k+": "+strings.Join(vs, ", "))
		}
	}
	aLive, aTest, bLive, revoked := secrets[0], secrets[1], secrets[2], secrets[3]
	admin(req{Method: "DELETE", Path: "/admin/v1/keys/" + keyIDs[revoked]})
	// A roll answers the new secret once; the audit log records it without.
	rolled := do(t, adm, req{Method: "POST", Path: "/admin/v1/keys/" + keyIDs[secrets[1]] + "/roll", Body: `{"overlapSeconds":600}`,
		Header: map[string]string{"Authorization": "Bearer " + in.adminToken, "X-Actor": testActor}})
	if rolled.Status != 201 {
		t.Fatalf("roll: %d %s", rolled.Status, rolled.Body)
	}
	secrets = append(secrets, rolled.json(t)["key"].(string))

	// Personal data, each value unique enough to be found anywhere.
	const (
		name    = "Quissama Zulmira Tchissola"
		nif     = "004417331LA042"
		email   = "zulmira.tchissola@quissama.ao"
		phone   = "+244 931 417 331"
		address = "Rua Sagrada Esperança 4417, Luanda"
	)
	personal := []string{name, "Zulmira", nif, "004417331", "zulmira.tchissola", "931 417 331", "931417331", "Sagrada Esperan"}
	client := `{"name":"` + name + `","nif":"` + nif + `","email":"` + email + `","phone":"` + phone + `","address":"` + address + `","type":"INDIVIDUAL"}`
	api := func(q req) resp { return c.add(do(t, pub, q)) }
	post := func(key, company, body string) resp {
		return api(req{Method: "POST", Path: "/api/v1/v1/clients", Key: key, Company: company, Body: body})
	}

	if r := post(aLive, coA, client); r.Status != 201 {
		t.Fatalf("create client: %d %s", r.Status, r.Body)
	}
	expectProblem(t, post(aLive, coA, client), 409, "nif_conflict")
	expectProblem(t, post(aLive, coB, client), 403, "company_mismatch")
	expectProblem(t, post(bLive, coB, client), 403, "insufficient_scope")
	for _, bad := range []string{
		`{"name":"` + name + `","email":"` + email + `@@"}`,
		`{"name":"` + name + `","phone":"` + phone + `0"}`,
		`{"name":"` + name + `","nif":"` + nif + `X"}`,
		`{"name":"` + strings.Repeat(name, 10) + `"}`,
		`{"name":"` + name + `","address":"` + address + `","type":"PERSON"}`,
		`{"name":"` + name + `","nif":` + `{"v":"` + nif + `"}}`,
		`{"name":"` + name + `"`,
		`{"name":"` + name + `"} {"email":"` + email + `"}`,
	} {
		expectProblem(t, post(aTest, coA, bad), 400, "invalid_body")
	}
	// Searches put personal data in the query string.
	for _, term := range []string{name, nif, "Zulmira"} {
		api(req{Path: "/api/v1/v1/clients?search=" + urlQuery(term), Key: aLive, Company: coA})
		api(req{Path: "/api/v1/v1/clients?search=" + urlQuery(term) + "&pageSize=0", Key: aLive, Company: coA})
	}
	// Keys where they do not belong, or not quite right.
	nearly := aLive[:len(aLive)-1] + "a"
	if strings.HasSuffix(aLive, "a") {
		nearly = aLive[:len(aLive)-1] + "b"
	}
	for _, h := range []string{"Bearer " + revoked, "Bearer " + nearly, "Basic " + aLive, "Bearer " + aLive + " " + aTest, aLive, "Bearer " + in.adminToken} {
		api(req{Path: "/api/v1/v1/clients", Company: coA, Header: map[string]string{"Authorization": h}})
	}
	api(req{Path: "/api/v1/v1/clients?key=" + aLive, Key: aLive, Company: coA})
	api(req{Path: "/api/v1/v1/" + aLive, Key: aLive, Company: coA})
	api(req{Path: "/api/v1/v1/clients/" + aLive, Key: aLive, Company: coA})
	api(req{Path: "/api/v1/v1/clients", Key: aLive, Company: aTest})
	api(req{Path: "/api/v1/v1/clients", Key: aLive, Company: coA, Header: map[string]string{"X-Request-Id": aLive}})
	// The admin API: listings and lookups, and wrong tokens.
	for _, co := range []string{coA, coB} {
		c.adminViews = append(c.adminViews, string(admin(req{Path: "/admin/v1/keys?companyId=" + co}).Body))
	}
	for _, id := range keyIDs {
		c.adminViews = append(c.adminViews, string(admin(req{Path: "/admin/v1/keys/" + id}).Body))
	}
	for _, co := range []string{coA, coB} {
		c.adminViews = append(c.adminViews, string(admin(req{Path: "/admin/v1/companies/" + co + "/audit"}).Body))
	}
	for _, tok := range []string{aLive, in.adminToken + "x", in.adminToken[:len(in.adminToken)-1]} {
		c.add(do(t, adm, req{Path: "/admin/v1/keys?companyId=" + coA, Header: map[string]string{"Authorization": "Bearer " + tok}}))
	}
	metrics := do(t, adm, req{Path: "/metrics"})

	// Now scan.
	var spanText []string
	for _, s := range spans.Ended() {
		spanText = append(spanText, s.Name(), s.Status().Description)
		for _, a := range s.Attributes() {
			spanText = append(spanText, string(a.Key)+"="+a.Value.String())
		}
		for _, e := range s.Events() {
			spanText = append(spanText, e.Name)
			for _, a := range e.Attributes {
				spanText = append(spanText, string(a.Key)+"="+a.Value.String())
			}
		}
	}
	if len(spanText) == 0 && traceExists() {
		t.Error("no span was recorded: the scan of traces would see nothing")
	}
	logs := in.logs.String()
	if !strings.Contains(logs, `"status":401`) || !strings.Contains(logs, `"status":201`) {
		t.Fatalf("the access log did not capture the run:\n%.2000s", logs)
	}
	forbidden := append(append([]string{in.adminToken}, secrets...), nearly)
	// A key's random part alone, too: a log that cut the prefix still leaks.
	for _, s := range secrets {
		forbidden = append(forbidden, s[len("igw_live_"):])
	}
	scan := func(where string, texts []string, needles []string) {
		t.Helper()
		for _, text := range texts {
			for _, n := range needles {
				if strings.Contains(text, n) {
					t.Errorf("%s contains %q: %.300s", where, n, text)
				}
			}
		}
	}
	everything := map[string][]string{
		"the access log": {logs}, "a span": spanText, "/metrics": {string(metrics.Body)},
		"an error body": c.errorBodies, "a response header": c.headers,
	}
	for where, texts := range everything {
		scan(where, texts, append(append([]string(nil), forbidden...), personal...))
	}
	scan("an admin key view", c.adminViews, forbidden)
	scan("a successful API answer", c.successBodies, forbidden)
	// The views name each key by its hint only.
	hint := regexp.MustCompile(`"hint":"igw_(live|test)_…[0-9A-Za-z]{4}"`)
	for _, v := range c.adminViews {
		if !hint.MatchString(v) {
			t.Errorf("admin view without a hint: %.200s", v)
		}
	}
}

// traceExists reports whether the gateway records spans (gateway/trace.go).
func traceExists() bool {
	_, err := os.Stat("trace.go")
	return err == nil
}
