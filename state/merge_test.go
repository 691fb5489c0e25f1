package state_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/state"
	"github.com/invoicing-ao/gateway/tenants"
)

// The rules of a merge into a live Redis, record by record: the newer
// record wins, a revocation always wins, a deletion after the file's record
// stays, and nothing the file lacks is deleted. Q is a live Redis restored
// from P's export E0; then P changes and exports E1, Q changes after that
// (its changes are newer), and E1 is imported into Q. The audit log is in
// each deployment's database, not in an export.
func TestMergeRules(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	clock := testenv.NewClock(time.Now())
	ctx := context.Background()
	sk := sealKey(t) // one deployment's: Q is P restored
	p := newPlaneAt(t, rdb, prefix+"p:", sk, clock.Now)
	q := newPlaneAt(t, rdb, prefix+"q:", sk, clock.Now)
	p.populate()
	p.endpoint("extra", coB, invoicing.Live, false)
	_, err := q.importFile(p.export(state.Sealing{}), state.Opening{})
	check(t, err)
	q.ids, q.secrets = p.ids, p.secrets

	clock.Add(time.Minute) // P changes, and exports E1
	_, _, err = p.keys.Revoke(ctx, p.ids["active"])
	check(t, err)
	r, err := p.keys.Roll(ctx, p.ids["successor"], time.Hour)
	check(t, err)
	p.ids["successor 2"] = r.New.ID
	check(t, p.limits.SetLimit(ctx, coA, invoicing.Live, tenants.Limit{Rate: 300, Burst: 300}))
	_, hookSecret, err := p.hooks.RotateSecret(ctx, p.ids["hook"], 0)
	check(t, err)
	_, err = p.audit.Record(ctx, audit.Entry{Actor: "p@ops", CompanyID: coA, Action: audit.ActionLimitsSet})
	check(t, err)
	clock.Add(time.Minute)
	e1 := p.export(state.Sealing{})

	clock.Add(time.Minute) // Q changes after E1
	_, _, err = q.keys.Revoke(ctx, p.ids["expiring"])
	check(t, err)
	check(t, q.limits.SetLimit(ctx, coB, invoicing.Test, tenants.Limit{Rate: 7, Burst: 7}))
	on := true
	_, err = q.hooks.UpdateWebhook(ctx, p.ids["off"], events.Patch{Enabled: &on})
	check(t, err)
	_, _, err = q.hooks.DeleteWebhook(ctx, p.ids["extra"])
	check(t, err)
	scopes, _ := authz.ParseScopes("invoices:read")
	qOnly, _, err := q.keys.Create(ctx, authz.NewKey{CompanyID: coA, Mode: invoicing.Live, Scopes: scopes})
	check(t, err)
	_, err = q.audit.Record(ctx, audit.Entry{Actor: "q@ops", CompanyID: coA, Action: audit.ActionLimitsSet})
	check(t, err)
	clock.Add(time.Minute)

	_, err = q.importFile(e1, state.Opening{})
	check(t, err)
	key := func(id string) authz.Key { k, err := q.keys.Get(ctx, id); check(t, err); return k }
	limits := func(co string) tenants.Limits { l, err := q.limits.Limits(ctx, co); check(t, err); return l }
	for _, c := range []struct {
		rule string
		ok   bool
	}{
		{"a revocation in the file wins over an active key in Redis", key(p.ids["active"]).State == authz.StateRevoked},
		{"a revocation in Redis wins over an active key in the file", key(p.ids["expiring"]).State == authz.StateRevoked},
		{"a roll in the file is taken: the old key ends at the overlap", key(p.ids["successor"]).ReplacedBy == p.ids["successor 2"]},
		{"the roll's successor is added", key(p.ids["successor 2"]).State == authz.StateActive},
		{"a key only Redis has is kept", key(qOnly.ID).State == authz.StateActive},
		{"a limit changed later in the file wins", limits(coA).Live == tenants.Limit{Rate: 300, Burst: 300}},
		{"a limit changed later in Redis wins (over the file's reset)", limits(coB).TestCustom && limits(coB).Test.Rate == 7},
		{"an endpoint changed later in the file wins (its new secret)", strings.Contains(string(q.parts()["webhooks"]), hookSecret)},
		{"an endpoint changed later in Redis wins (enabled there)", endpoint(t, q, p.ids["off"]).Enabled},
		{"an endpoint deleted in Redis after the file stays deleted", endpointGone(q, p.ids["extra"])},
		{"an export carries no audit log: Q's is its own", auditActors(t, q, coA) == "q@ops"},
	} {
		if !c.ok {
			t.Errorf("rule broken: %s", c.rule)
		}
	}
	if err := q.verify("active"); err == nil {
		t.Error("the key revoked in the file works after the merge")
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func endpoint(t *testing.T, p *plane, id string) events.Webhook {
	e, err := p.hooks.Webhook(context.Background(), id)
	check(t, err)
	return e
}

func endpointGone(p *plane, id string) bool {
	_, err := p.hooks.Webhook(context.Background(), id)
	return err != nil
}

func auditActors(t *testing.T, p *plane, co string) string {
	evs, _, err := p.audit.Read(context.Background(), co, time.Time{}, 100)
	check(t, err)
	var out []string
	for _, e := range evs {
		out = append(out, e.Actor)
	}
	b, _ := json.Marshal(out)
	return strings.Trim(strings.ReplaceAll(string(b), `"`, ""), "[]")
}

// An older gateway's export (format 2) carries the audit log, which is
// merged into the log's database as a union by id: an entry the log has is
// left as it is; importing again adds nothing.
func TestOlderExportsAuditLogMerged(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	p := newPlane(t, rdb, prefix, sealKey(t))
	p.populate()
	older := olderAudit(time.Now())
	file := p.asFormat2(p.export(state.Sealing{}), older)
	// One of the file's entries is in the log already.
	one := older
	one.Companies = []audit.StreamRecord{{CompanyID: coB, Entries: older.Companies[1].Entries}}
	plan, err := p.audit.PlanImport(context.Background(), one)
	check(t, err)
	check(t, plan.Around(context.Background(), func(context.Context) error { return nil }))
	before := p.auditCount()

	counts, err := p.importFile(file, state.Opening{})
	check(t, err)
	if c := counts["audit"]; c.Added != 2 || c.Unchanged != 1 {
		t.Errorf("audit: %+v, want 2 added and 1 the log had", c)
	}
	if n := p.auditCount(); n != before+2 {
		t.Errorf("%d entries in the log, want %d", n, before+2)
	}
	if got := auditActors(t, p, coA); got != "ana@ops,ana@ops,ana@ops,ana@ops" {
		t.Errorf("company A's log: %s", got)
	}
	counts, err = p.importFile(file, state.Opening{})
	check(t, err)
	if c := counts["audit"]; c.Added != 0 || c.Unchanged != 3 || p.auditCount() != before+2 {
		t.Errorf("a second import: %+v, %d entries", c, p.auditCount())
	}
	// A file of format 3 has no audit part, and is imported without one.
	if counts, err := p.importFile(p.export(state.Sealing{}), state.Opening{}); err != nil || counts["audit"] != (state.Counts{}) {
		t.Errorf("a file without an audit part: %+v, %v", counts["audit"], err)
	}
}
