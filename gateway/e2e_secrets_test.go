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
	spans := recordSpans(t)
	w := newWorld(t)
	in := w.start()
	run := &leakRun{t: t, in: in, pub: in.pub.URL, adm: in.admin.URL}

	secrets, keyIDs := run.makeKeys()
	aLive, aTest, bLive, revoked := secrets[0], secrets[1], secrets[2], secrets[3]
	run.admin(req{Method: "DELETE", Path: "/admin/v1/keys/" + keyIDs[revoked]})
	// A roll answers the new secret once; the audit log records it without.
	rolled := do(t, run.adm, req{Method: "POST", Path: "/admin/v1/keys/" + keyIDs[secrets[1]] + "/roll", Body: `{"overlapSeconds":600}`,
		Header: map[string]string{"Authorization": "Bearer " + in.adminToken, "X-Actor": testActor}})
	if rolled.Status != 201 {
		t.Fatalf("roll: %d %s", rolled.Status, rolled.Body)
	}
	secrets = append(secrets, rolled.json(t)["key"].(string))

	personal := run.sendPersonalData(aLive, aTest, bLive)
	nearly := run.sendMisplacedKeys(aLive, aTest, revoked)
	run.readAdminViews(keyIDs, aLive)
	metrics := do(t, run.adm, req{Path: "/metrics"})

	// Now scan.
	spanText := spanTexts(spans)
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
	c := &run.c
	everything := map[string][]string{
		"the access log": {logs}, "a span": spanText, "/metrics": {string(metrics.Body)},
		"an error body": c.errorBodies, "a response header": c.headers,
	}
	for where, texts := range everything {
		scanFor(t, where, texts, append(append([]string(nil), forbidden...), personal...))
	}
	scanFor(t, "an admin key view", c.adminViews, forbidden)
	scanFor(t, "a successful API answer", c.successBodies, forbidden)
	// The views name each key by its hint only.
	hint := regexp.MustCompile(`"hint":"igw_(live|test)_…[0-9A-Za-z]{4}"`)
	for _, v := range c.adminViews {
		if !hint.MatchString(v) {
			t.Errorf("admin view without a hint: %.200s", v)
		}
	}
}

// recordSpans makes a recorder of every span the process ends the global
// tracer provider, until the test ends. The gateway, authz and tenants
// trace through otel's global provider unless given one. Shut down at the
// end, it records nothing more, even through the default provider, which
// delegates to the first one set.
func recordSpans(t *testing.T) *tracetest.SpanRecorder {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prev)
		_ = tp.Shutdown(context.Background())
	})
	return spans
}

// spanTexts is every name, status, attribute and event of the spans ended.
func spanTexts(spans *tracetest.SpanRecorder) []string {
	var out []string
	for _, s := range spans.Ended() {
		out = append(out, s.Name(), s.Status().Description)
		for _, a := range s.Attributes() {
			out = append(out, string(a.Key)+"="+a.Value.String())
		}
		for _, e := range s.Events() {
			out = append(out, e.Name)
			for _, a := range e.Attributes {
				out = append(out, string(a.Key)+"="+a.Value.String())
			}
		}
	}
	return out
}

// scanFor fails for each text that contains one of the needles.
func scanFor(t *testing.T, where string, texts, needles []string) {
	t.Helper()
	for _, text := range texts {
		for _, n := range needles {
			if strings.Contains(text, n) {
				t.Errorf("%s contains %q: %.300s", where, n, text)
			}
		}
	}
}

// leakRun is a run of requests whose every answer is captured.
type leakRun struct {
	t        *testing.T
	in       *instance
	pub, adm string
	c        capture
}

// admin sends q to the admin API with the token and actor.
func (r *leakRun) admin(q req) resp {
	if q.Header == nil {
		q.Header = map[string]string{}
	}
	q.Header["Authorization"] = "Bearer " + r.in.adminToken
	q.Header["X-Actor"] = testActor
	return r.c.add(do(r.t, r.adm, q))
}

// api sends q to the public API.
func (r *leakRun) api(q req) resp { return r.c.add(do(r.t, r.pub, q)) }

// makeKeys makes four keys through the admin API, as the dashboard does
// (the creation answer is the one place a secret may appear): A LIVE, A
// TEST, B LIVE and one to revoke. It returns their secrets and ids.
func (r *leakRun) makeKeys() (secrets []string, keyIDs map[string]string) {
	t := r.t
	keyIDs = map[string]string{}
	for _, body := range []string{
		`{"companyId":"` + coA + `","mode":"LIVE","scopes":["invoices:read","clients:read","clients:write"],"name":"a live"}`,
		`{"companyId":"` + coA + `","mode":"TEST","scopes":["clients:read","clients:write"],"name":"a test"}`,
		`{"companyId":"` + coB + `","mode":"LIVE","scopes":["clients:read"],"name":"b live"}`,
		`{"companyId":"` + coA + `","mode":"LIVE","scopes":["clients:read"],"name":"to revoke"}`,
	} {
		res := do(t, r.adm, req{Method: "POST", Path: "/admin/v1/keys", Body: body, Header: map[string]string{"Authorization": "Bearer " + r.in.adminToken, "X-Actor": testActor}})
		m := res.json(t)
		if res.Status != 201 {
			t.Fatalf("create key: %d %s", res.Status, res.Body)
		}
		secrets = append(secrets, m["key"].(string))
		keyIDs[m["key"].(string)] = m["id"].(string)
		for k, vs := range res.Header {
			r.c.headers = append(r.c.headers, k+": "+strings.Join(vs, ", "))
		}
	}
	return secrets, keyIDs
}

// sendPersonalData creates a client with personal data, each value unique
// enough to be found anywhere, then sends it in refused creates and
// searches. It returns the values to look for.
func (r *leakRun) sendPersonalData(aLive, aTest, bLive string) []string {
	t := r.t
	const (
		name    = "Quissama Zulmira Tchissola"
		nif     = "004417331LA042"
		email   = "zulmira.tchissola@quissama.ao"
		phone   = "+244 931 417 331"
		address = "Rua Sagrada Esperança 4417, Luanda"
	)
	client := `{"name":"` + name + `","nif":"` + nif + `","email":"` + email + `","phone":"` + phone + `","address":"` + address + `","type":"INDIVIDUAL"}`
	post := func(key, company, body string) resp {
		return r.api(req{Method: "POST", Path: "/api/v1/v1/clients", Key: key, Company: company, Body: body})
	}
	if res := post(aLive, coA, client); res.Status != 201 {
		t.Fatalf("create client: %d %s", res.Status, res.Body)
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
		r.api(req{Path: "/api/v1/v1/clients?search=" + urlQuery(term), Key: aLive, Company: coA})
		r.api(req{Path: "/api/v1/v1/clients?search=" + urlQuery(term) + "&pageSize=0", Key: aLive, Company: coA})
	}
	return []string{name, "Zulmira", nif, "004417331", "zulmira.tchissola", "931 417 331", "931417331", "Sagrada Esperan"}
}

// sendMisplacedKeys sends keys where they do not belong, or not quite
// right; it returns the near miss of aLive it sent.
func (r *leakRun) sendMisplacedKeys(aLive, aTest, revoked string) (nearly string) {
	nearly = aLive[:len(aLive)-1] + "a"
	if strings.HasSuffix(aLive, "a") {
		nearly = aLive[:len(aLive)-1] + "b"
	}
	for _, h := range []string{"Bearer " + revoked, "Bearer " + nearly, "Basic " + aLive, "Bearer " + aLive + " " + aTest, aLive, "Bearer " + r.in.adminToken} {
		r.api(req{Path: "/api/v1/v1/clients", Company: coA, Header: map[string]string{"Authorization": h}})
	}
	r.api(req{Path: "/api/v1/v1/clients?key=" + aLive, Key: aLive, Company: coA})
	r.api(req{Path: "/api/v1/v1/" + aLive, Key: aLive, Company: coA})
	r.api(req{Path: "/api/v1/v1/clients/" + aLive, Key: aLive, Company: coA})
	r.api(req{Path: "/api/v1/v1/clients", Key: aLive, Company: aTest})
	r.api(req{Path: "/api/v1/v1/clients", Key: aLive, Company: coA, Header: map[string]string{"X-Request-Id": aLive}})
	return nearly
}

// readAdminViews reads the admin API's listings and lookups, and tries it
// with wrong tokens (a key's secret among them).
func (r *leakRun) readAdminViews(keyIDs map[string]string, aLive string) {
	c := &r.c
	for _, co := range []string{coA, coB} {
		c.adminViews = append(c.adminViews, string(r.admin(req{Path: "/admin/v1/keys?companyId=" + co}).Body))
	}
	for _, id := range keyIDs {
		c.adminViews = append(c.adminViews, string(r.admin(req{Path: "/admin/v1/keys/" + id}).Body))
	}
	for _, co := range []string{coA, coB} {
		c.adminViews = append(c.adminViews, string(r.admin(req{Path: "/admin/v1/companies/" + co + "/audit"}).Body))
	}
	for _, tok := range []string{aLive, r.in.adminToken + "x", r.in.adminToken[:len(r.in.adminToken)-1]} {
		c.add(do(r.t, r.adm, req{Path: "/admin/v1/keys?companyId=" + coA, Header: map[string]string{"Authorization": "Bearer " + tok}}))
	}
}

// traceExists reports whether the gateway records spans (gateway/trace.go).
func traceExists() bool {
	_, err := os.Stat("trace.go")
	return err == nil
}
