package admin_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
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

// Expiry through the admin API and the public one: refused with
// expired_api_key at the expiry on every instance, no longer counted, and
// shown as expired.
func TestKeyExpiry(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a, b := w.start(), w.start()
	b.clock.Set(a.clock.Now())
	expires := a.clock.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	r := a.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys", Body: createKeyBody(coA, `,"expiresAt":"`+expires.Format(time.RFC3339Nano)+`"`)})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	m := r.json(t)
	if m["expiresAt"] != expires.Format("2006-01-02T15:04:05.000Z") && m["expiresAt"] != expires.Format(time.RFC3339Nano) {
		t.Errorf("expiresAt = %v, want %v", m["expiresAt"], expires)
	}
	secret, id := m["key"].(string), m["id"].(string)
	for i := 0; i < 9; i++ { // ten keys: the limit
		a.key(t, coA, "LIVE", "clients:read")
	}
	expectProblem(t, a.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys", Body: createKeyBody(coA, "")}), 409, "key_limit_reached")
	q := req{Path: "/api/v1/v1/clients", Key: secret, Company: coA}
	for _, in := range []*instance{a, b} {
		if r := do(t, in.pub.URL, q); r.Status != 200 {
			t.Fatalf("before expiry: %d %s", r.Status, r.Body)
		}
	}
	a.clock.Set(expires)
	b.clock.Set(expires)
	for _, in := range []*instance{a, b} {
		r := do(t, in.pub.URL, q)
		expectProblem(t, r, 401, "expired_api_key")
		if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("expired_api_key without WWW-Authenticate: %q", r.Header.Get("WWW-Authenticate"))
		}
	}
	if g := a.adminCall(t, req{Path: "/admin/v1/keys/" + id}).json(t); g["state"] != "expired" {
		t.Errorf("expired key's state = %v", g["state"])
	}
	// No longer counted: an eleventh key is made.
	if r := a.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys", Body: createKeyBody(coA, "")}); r.Status != 201 {
		t.Fatalf("after an expiry: %d %s", r.Status, r.Body)
	}
	// Bad expiries change nothing.
	for _, bad := range []string{`"tomorrow"`, `"` + expires.Add(-time.Minute).Format(time.RFC3339) + `"`, `3600`} {
		r := a.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys", Body: createKeyBody(coB, `,"expiresAt":`+bad)})
		p := expectProblem(t, r, 400, "invalid_body")
		if !strings.Contains(string(r.Body), `"field":"expiresAt"`) {
			t.Errorf("expiresAt %s: %v", bad, p)
		}
	}
	if l := a.adminCall(t, req{Path: "/admin/v1/keys?companyId=" + coB}).json(t); len(l["data"].([]any)) != 0 {
		t.Errorf("refused creations made keys: %v", l)
	}
}

// Rolling at the limit: the new key answers once with its secret and what
// it replaces; both work during the overlap; the old one expires after it.
func TestRollKey(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	var old map[string]any
	for i := 0; i < 10; i++ {
		r := in.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys", Body: createKeyBody(coA, `,"allowedCidrs":["127.0.0.0/8"]`)})
		if r.Status != 201 {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		old = r.json(t)
	}
	oldID, oldSecret := old["id"].(string), old["key"].(string)
	roll := func(body string, hdr map[string]string) resp {
		return in.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys/" + oldID + "/roll", Body: body, Header: hdr})
	}
	// Bad requests change nothing.
	expectProblem(t, roll(`{"overlapSeconds":-1}`, nil), 400, "invalid_body")
	expectProblem(t, roll(`{"overlapSeconds":"60"}`, nil), 400, "invalid_body")
	expectProblem(t, roll(`{"overlap":60}`, nil), 400, "invalid_body")
	expectProblem(t, roll(`{"overlapSeconds":60}`, map[string]string{"X-Actor": ""}), 400, "missing_actor")
	expectProblem(t, in.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys/key_aaaaaaaaaaaaaaaaaaaa/roll"}), 404, "not_found")

	r := roll(`{"overlapSeconds":3600}`, nil)
	if r.Status != 201 {
		t.Fatalf("roll at the limit: %d %s", r.Status, r.Body)
	}
	n := r.json(t)
	prev, _ := n["previous"].(map[string]any)
	// Compared as instants: JSON times drop trailing zeros (.06Z, not .060Z).
	end := in.clock.Now().Add(time.Hour)
	if n["replaces"] != oldID || !strings.HasPrefix(n["key"].(string), "igw_live_") || n["id"] == oldID ||
		prev["replacedBy"] != n["id"] || !sameMilli(prev["expiresAt"], end) || r.Header.Get("Location") != "/admin/v1/keys/"+n["id"].(string) {
		t.Fatalf("roll answer: %s", r.Body)
	}
	if nets, _ := n["allowedCidrs"].([]any); len(nets) != 1 || nets[0] != "127.0.0.0/8" {
		t.Errorf("the successor's networks: %v", n["allowedCidrs"])
	}
	for _, s := range []string{oldSecret, n["key"].(string)} {
		if r := do(t, in.pub.URL, req{Path: "/api/v1/v1/clients", Key: s, Company: coA}); r.Status != 200 {
			t.Fatalf("during the overlap: %d %s", r.Status, r.Body)
		}
	}
	expectProblem(t, roll("", nil), 409, "key_not_rollable")
	if g := in.adminCall(t, req{Path: "/admin/v1/keys/" + n["id"].(string)}); g.json(t)["key"] != nil {
		t.Errorf("the new key's view shows its secret: %s", g.Body)
	}
	in.clock.Add(time.Hour)
	expectProblem(t, do(t, in.pub.URL, req{Path: "/api/v1/v1/clients", Key: oldSecret, Company: coA}), 401, "expired_api_key")
	// Without a body the overlap is a day.
	r = in.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys/" + n["id"].(string) + "/roll"})
	if r.Status != 201 || !sameMilli(r.json(t)["previous"].(map[string]any)["expiresAt"], in.clock.Now().Add(24*time.Hour)) {
		t.Fatalf("roll without a body: %d %s", r.Status, r.Body)
	}
}

// Every change is recorded with its actor, before and after; expiries are
// shown by the system actor; changes need an actor.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	start := in.clock.Now().UTC().Truncate(time.Millisecond)
	auditNeedsActor(t, in)
	createdID, rolledID := auditedChanges(t, in, start)

	r := in.adminCall(t, req{Path: "/admin/v1/companies/" + coA + "/audit"})
	if r.Status != 200 {
		t.Fatalf("audit: %d %s", r.Status, r.Body)
	}
	var v struct {
		Events []struct {
			Time          time.Time
			Actor, Action string
			KeyID         *string
			Before, After map[string]any
		} `json:"data"`
		Next *time.Time
	}
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatal(err)
	}
	want := []struct{ actor, action, key string }{
		{"ana@dashboard", "key.created", createdID},
		{"bruno@dashboard", "key.rolled", createdID},
		{"bruno@dashboard", "key.created", rolledID},
		{"carla@dashboard", "key.revoked", rolledID},
		{"dario@dashboard", "limits.set", ""},
		{"system", "key.expired", createdID},
		{"dario@dashboard", "limits.reset", ""},
	}
	if len(v.Events) != len(want) || v.Next != nil {
		t.Fatalf("audit = %s", r.Body)
	}
	for i, ev := range v.Events {
		key := ""
		if ev.KeyID != nil {
			key = *ev.KeyID
		}
		if ev.Actor != want[i].actor || ev.Action != want[i].action || key != want[i].key {
			t.Errorf("event %d = %s by %s on %q, want %+v", i, ev.Action, ev.Actor, key, want[i])
		}
	}
	if e := v.Events[0]; e.Before != nil || e.After["state"] != "active" || e.After["expiresAt"] == nil {
		t.Errorf("creation: before %v, after %v", e.Before, e.After)
	}
	if e := v.Events[1]; e.Before["replacedBy"] != nil || e.After["replacedBy"] != rolledID {
		t.Errorf("roll: before %v, after %v", e.Before, e.After)
	}
	if e := v.Events[3]; e.Before["state"] != "active" || e.After["state"] != "revoked" {
		t.Errorf("revocation: before %v, after %v", e.Before, e.After)
	}
	if e := v.Events[4]; e.Before["live"].(map[string]any)["custom"] != false || e.After["live"].(map[string]any)["burst"] != 7.0 {
		t.Errorf("limits: before %v, after %v", e.Before, e.After)
	}
	if e := v.Events[5]; !e.Time.Equal(start.Add(61*time.Second)) || e.After["state"] != "expired" {
		t.Errorf("expiry at %v: %v", e.Time, e.After)
	}
	auditPaging(t, in, v.Events[4].Time, len(want))
}

// auditPaging: since, paging and bad parameters. Since later (the limit
// change), 3 events; pages of 2 add up to all n.
func auditPaging(t *testing.T, in *instance, later time.Time, n int) {
	t.Helper()
	since := later.Format(time.RFC3339Nano)
	if r := in.adminCall(t, req{Path: "/admin/v1/companies/" + coA + "/audit?since=" + since}); strings.Count(string(r.Body), `"action"`) != 3 {
		t.Errorf("since the limit change: %s", r.Body)
	}
	// Pages of about 2 (never ending inside a millisecond) add up to the
	// whole log, each event once.
	var paged []string
	for path := "/admin/v1/companies/" + coA + "/audit?limit=2"; ; {
		page := in.adminCall(t, req{Path: path}).json(t)
		for _, ev := range page["data"].([]any) {
			paged = append(paged, ev.(map[string]any)["action"].(string))
		}
		next, ok := page["next"].(string)
		if !ok || len(paged) > 20 {
			break
		}
		path = "/admin/v1/companies/" + coA + "/audit?limit=2&since=" + next
	}
	if len(paged) != n {
		t.Errorf("paged through %v, want %d events", paged, n)
	}
	expectProblem(t, in.adminCall(t, req{Path: "/admin/v1/companies/" + coA + "/audit?since=yesterday"}), 400, "invalid_parameter")
	expectProblem(t, in.adminCall(t, req{Path: "/admin/v1/companies/" + coA + "/audit?limit=0"}), 400, "invalid_parameter")
	expectProblem(t, in.adminCall(t, req{Path: "/admin/v1/companies/" + coA + "/audit?until=x"}), 400, "invalid_parameter")
	expectProblem(t, in.adminCall(t, req{Path: "/admin/v1/companies/00000000-0000-4000-8000-0000000000ff/audit"}), 422, "unknown_company")
	if r := in.adminCall(t, req{Path: "/admin/v1/companies/" + coB + "/audit"}); strings.Count(string(r.Body), `"action"`) != 0 {
		t.Errorf("another company's audit: %s", r.Body)
	}
}

// auditNeedsActor: a change without a proper actor is refused and changes
// nothing.
func auditNeedsActor(t *testing.T, in *instance) {
	t.Helper()
	for _, bad := range []string{"", strings.Repeat("a", 201), "ana\tbruno", "igw_live_pasted"} {
		r := in.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys", Body: createKeyBody(coA, ""), Header: byActor(bad)})
		code := "invalid_actor"
		if bad == "" {
			code = "missing_actor"
		}
		expectProblem(t, r, 400, code)
		if !strings.Contains(string(r.Body), `"field":"X-Actor"`) {
			t.Errorf("actor %q: %s", bad, r.Body)
		}
	}
	if l := in.adminCall(t, req{Path: "/admin/v1/keys?companyId=" + coA}).json(t); len(l["data"].([]any)) != 0 {
		t.Fatalf("refused changes made keys: %v", l)
	}
}

// auditedChanges makes changes, each by its actor, a second apart from
// start on: a key created to expire in an hour, rolled with a minute's
// overlap (its expiry, a minute on, is recorded by nobody), the new key
// revoked keeping the old one (twice: the second changes nothing), a limit
// set and reset. It
// answers the keys' ids.
func auditedChanges(t *testing.T, in *instance, start time.Time) (createdID, rolledID string) {
	t.Helper()
	exp := start.Add(time.Hour).Format(time.RFC3339Nano)
	createdID, _ = in.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys", Header: byActor("ana@dashboard"),
		Body: createKeyBody(coA, `,"expiresAt":"`+exp+`"`)}).json(t)["id"].(string)
	in.clock.Add(time.Second)
	rolledID, _ = in.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys/" + createdID + "/roll", Header: byActor("bruno@dashboard"),
		Body: `{"overlapSeconds":60}`}).json(t)["id"].(string)
	in.clock.Add(time.Second)
	// The old key is kept (its overlap runs on to an expiry), and named.
	kept := in.adminCall(t, req{Method: "DELETE", Path: "/admin/v1/keys/" + rolledID + "?keepPrevious=true", Header: byActor("carla@dashboard")}).json(t)
	if still, _ := kept["stillActive"].([]any); len(still) != 1 || still[0].(map[string]any)["id"] != createdID {
		t.Errorf("revoked keeping the old key: %v", kept)
	}
	in.adminCall(t, req{Method: "DELETE", Path: "/admin/v1/keys/" + rolledID + "?keepPrevious=true", Header: byActor("carla@dashboard")}) // no change, no event
	in.clock.Add(time.Second)
	in.adminCall(t, req{Method: "PUT", Path: "/admin/v1/companies/" + coA + "/limits", Header: byActor("dario@dashboard"), Body: `{"mode":"LIVE","rate":5,"burst":7}`})
	in.clock.Add(time.Minute) // the rolled key's overlap ends: an expiry nobody records
	in.adminCall(t, req{Method: "DELETE", Path: "/admin/v1/companies/" + coA + "/limits", Header: byActor("dario@dashboard")})
	return createdID, rolledID
}

// byActor is the header of a change made by actor.
func byActor(actor string) map[string]string { return map[string]string{"X-Actor": actor} }

// sameMilli reports whether a JSON time (trailing zeros dropped) is t to the
// millisecond.
func sameMilli(v any, t time.Time) bool {
	got, err := time.Parse(time.RFC3339Nano, fmt.Sprint(v))
	return err == nil && got.Sub(t).Abs() < time.Millisecond
}
