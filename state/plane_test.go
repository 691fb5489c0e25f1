package state_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/internal/seal"
	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/state"
	"github.com/invoicing-ao/gateway/tenants"
)

const (
	coA = "0a5e7c1e-0000-4000-8000-00000000000a"
	coB = "0a5e7c1e-0000-4000-8000-00000000000b"
)

// plane is the control plane of a test: the four adapters, on one Redis
// prefix and (the audit log) a database of its own, as cmd/gateway wires
// them.
type plane struct {
	t       testing.TB
	rdb     redis.UniversalClient
	prefix  string
	keys    *authz.Keyring
	limits  *tenants.Limiter
	hooks   *events.Service
	audit   *audit.Log
	auditDB *sqldb.DB
	cfg     state.Config
	secrets map[string]string // what must never be in an encrypted file: key and signing secrets
	ids     map[string]string // names of the test's keys and endpoints → ids
	sign    [][]byte          // the files' signing keys, from the seal key (as cmd/gateway does)
}

func newPlane(t testing.TB, rdb redis.UniversalClient, prefix, sealKey string) *plane {
	t.Helper()
	return newPlaneAt(t, rdb, prefix, sealKey, time.Now)
}

// newPlaneAt is a plane whose adapters read the time from now.
func newPlaneAt(t testing.TB, rdb redis.UniversalClient, prefix, sealKey string, now func() time.Time) *plane {
	t.Helper()
	return newPlaneOf(t, rdb, prefix, sealKey, now, false)
}

// newStrictPlane is a plane whose endpoints must be https to public
// addresses, as by default (the others allow http and loopback receivers).
func newStrictPlane(t testing.TB, rdb redis.UniversalClient, prefix, sealKey string) *plane {
	t.Helper()
	return newPlaneOf(t, rdb, prefix, sealKey, time.Now, true)
}

func newPlaneOf(t testing.TB, rdb redis.UniversalClient, prefix, sealKey string, now func() time.Time, strict bool) *plane {
	t.Helper()
	ring, err := seal.NewKeyring(sealKey)
	if err != nil {
		t.Fatal(err)
	}
	p := &plane{t: t, rdb: rdb, prefix: prefix, secrets: map[string]string{}, ids: map[string]string{}, sign: ring.FileKeys()}
	p.keys = authz.New(authz.Config{Redis: rdb, Prefix: prefix + "authz:", NoPubSub: true, Now: now})
	t.Cleanup(func() { p.keys.Close() })
	p.limits = tenants.New(tenants.Config{Redis: rdb, Prefix: prefix + "tenants:", Now: now})
	ec := events.Config{Redis: rdb, Prefix: prefix + "events:", Secrets: ring, AllowHTTP: true,
		AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Now: now}
	if strict {
		ec.AllowHTTP, ec.AllowedNetworks = false, nil
	}
	p.hooks, err = events.New(ec)
	if err != nil {
		t.Fatal(err)
	}
	p.auditDB, err = sqldb.Open(context.Background(), sqldb.Config{URL: "sqlite:" + filepath.Join(t.TempDir(), "gateway.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.auditDB.Close)
	if _, err := p.auditDB.Apply(context.Background(), audit.Migrations()); err != nil {
		t.Fatal(err)
	}
	p.audit = audit.New(audit.Config{DB: p.auditDB, Now: now})
	p.cfg = state.Config{Redis: rdb, Gateway: "test", Parts: []state.Part{
		part("keys", p.keys.ExportState, p.keys.PlanImport),
		part("limits", p.limits.ExportState, p.limits.PlanImport),
		part("webhooks", p.hooks.ExportState, p.hooks.PlanImport),
		importOnly("audit", p.audit.PlanImport),
	}}
	return p
}

// importOnly is cmd/gateway's wiring of a part files no longer carry.
func importOnly[S interface{ Records() int }, P state.Plan](name string, plan func(context.Context, S) (P, error)) state.Part {
	p := part(name, nil, plan)
	p.ImportOnly, p.Export = true, nil
	return p
}

// part is cmd/gateway's wiring of an adapter's export and import.
func part[S interface{ Records() int }, P state.Plan](name string, export func(context.Context) (S, error), plan func(context.Context, S) (P, error)) state.Part {
	return state.Part{
		Name: name,
		Export: func(ctx context.Context) (any, int, error) {
			s, err := export(ctx)
			return s, s.Records(), err
		},
		Plan: func(ctx context.Context, raw json.RawMessage) (state.Plan, error) {
			var s S
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s); err != nil {
				return nil, err
			}
			return plan(ctx, s)
		},
	}
}

// populate gives the plane a bit of everything: active, revoked, rolled and
// expiring keys, a limit set and one reset, endpoints (one rotated, one
// disabled, one deleted), and audit entries.
func (p *plane) populate() {
	t, ctx := p.t, context.Background()
	scopes, _ := authz.ParseScopes("invoices:read,clients:read")
	newKey := func(name, company string, m invoicing.Mode, exp *time.Time) {
		k, secret, err := p.keys.Create(ctx, authz.NewKey{CompanyID: company, Mode: m, Scopes: scopes, Name: name, ExpiresAt: exp,
			AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
		if err != nil {
			t.Fatal(err)
		}
		p.ids[name], p.secrets[name] = k.ID, secret
	}
	later := time.Now().Add(30 * 24 * time.Hour)
	newKey("active", coA, invoicing.Live, nil)
	newKey("revoked", coA, invoicing.Live, nil)
	newKey("rolled", coA, invoicing.Test, nil)
	newKey("expiring", coB, invoicing.Test, &later)
	if _, _, err := p.keys.Revoke(ctx, p.ids["revoked"]); err != nil {
		t.Fatal(err)
	}
	r, err := p.keys.Roll(ctx, p.ids["rolled"], time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p.ids["successor"], p.secrets["successor"] = r.New.ID, r.Secret
	if err := p.limits.SetLimit(ctx, coA, invoicing.Live, tenants.Limit{Rate: 100, Burst: 200}); err != nil {
		t.Fatal(err)
	}
	if err := p.limits.SetLimit(ctx, coB, "", tenants.Limit{Rate: 5, Burst: 5}); err != nil {
		t.Fatal(err)
	}
	if err := p.limits.ResetLimits(ctx, coB); err != nil {
		t.Fatal(err)
	}
	p.endpoint("hook", coA, invoicing.Test, false)
	p.endpoint("off", coA, invoicing.Live, true)
	p.endpoint("gone", coB, invoicing.Test, false)
	if _, sec, err := p.hooks.RotateSecret(ctx, p.ids["hook"], time.Hour); err != nil {
		t.Fatal(err)
	} else {
		p.secrets["hook rotated"] = sec
	}
	if _, _, err := p.hooks.DeleteWebhook(ctx, p.ids["gone"]); err != nil {
		t.Fatal(err)
	}
	for _, e := range []audit.Entry{
		{Actor: "ana@ops", CompanyID: coA, Action: audit.ActionKeyCreated, KeyID: p.ids["active"], After: json.RawMessage(`{"name":"active"}`)},
		{Actor: "ana@ops", CompanyID: coA, Action: audit.ActionKeyRevoked, KeyID: p.ids["revoked"]},
		{Actor: "rui@ops", CompanyID: coB, Action: audit.ActionLimitsReset},
	} {
		if _, err := p.audit.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
}

func (p *plane) endpoint(name, company string, m invoicing.Mode, disabled bool) {
	p.t.Helper()
	ep, sec, err := p.hooks.CreateWebhook(context.Background(), events.NewWebhook{CompanyID: company, Mode: m,
		URL: "http://127.0.0.1:9/hooks/" + name, Types: []string{"invoice.paid"}, Disabled: disabled})
	if err != nil {
		p.t.Fatal(err)
	}
	p.ids[name], p.secrets[name] = ep.ID, sec
}

// export is an export of the plane, in memory, signed with its key.
func (p *plane) export(s state.Sealing) []byte {
	p.t.Helper()
	s.SigningKey = p.sign[0]
	return p.exportAs(s)
}

// exportAs is an export sealed and signed as s says.
func (p *plane) exportAs(s state.Sealing) []byte {
	p.t.Helper()
	var buf bytes.Buffer
	if _, err := state.Export(context.Background(), p.cfg, &buf, s); err != nil {
		p.t.Fatal(err)
	}
	return buf.Bytes()
}

// importFile reads and imports a file, its signature checked with the
// plane's keys (unless o names others).
func (p *plane) importFile(b []byte, o state.Opening) (map[string]state.Counts, error) {
	if o.SigningKeys == nil {
		o.SigningKeys = p.sign
	}
	doc, err := state.Read(bytes.NewReader(b), o)
	if err != nil {
		return nil, err
	}
	return state.Import(context.Background(), p.cfg, doc)
}

// parts is the document of a plain export: what the plane holds.
func (p *plane) parts() map[string]json.RawMessage {
	p.t.Helper()
	doc, err := state.Read(bytes.NewReader(p.export(state.Sealing{})), state.Opening{SigningKeys: p.sign})
	if err != nil {
		p.t.Fatal(err)
	}
	return doc.Parts
}

// lose deletes every key of the plane's prefix, as a Redis restarted empty
// loses them (never the shared Redis's other keys).
func (p *plane) lose() {
	p.t.Helper()
	ctx := context.Background()
	keys, err := p.rdb.Keys(ctx, p.prefix+"*").Result()
	if err != nil {
		p.t.Fatal(err)
	}
	for _, k := range keys {
		if err := p.rdb.Del(ctx, k).Err(); err != nil {
			p.t.Fatal(err)
		}
	}
}

// snapshot is every key of the prefix with its serialized value: equal
// snapshots, nothing changed.
func (p *plane) snapshot() map[string]string {
	p.t.Helper()
	ctx := context.Background()
	keys, err := p.rdb.Keys(ctx, p.prefix+"*").Result()
	if err != nil {
		p.t.Fatal(err)
	}
	sort.Strings(keys)
	out := map[string]string{}
	for _, k := range keys {
		out[k] = p.rdb.Dump(ctx, k).Val()
	}
	return out
}

// olderAudit is the audit part of a file of format 2, as a gateway that
// kept the log in Redis exported it: company A's and B's entries at now.
func olderAudit(now time.Time) audit.State {
	ms := func(d time.Duration) string { return strconv.FormatInt(now.Add(-d).UnixMilli(), 10) }
	return audit.State{Version: audit.StateVersion, Companies: []audit.StreamRecord{
		{CompanyID: coA, Entries: []audit.EntryRecord{
			{ID: ms(time.Hour) + "-0", Fields: map[string]string{"time": ms(time.Hour), "actor": "ana@ops", "action": audit.ActionKeyCreated, "key": "key_aaaaaaaaaaaaaaaaaaaa", "after": `{"name":"active"}`}},
			{ID: ms(time.Hour) + "-1", Fields: map[string]string{"time": ms(time.Hour), "actor": "ana@ops", "action": audit.ActionKeyRevoked, "key": "key_bbbbbbbbbbbbbbbbbbbb"}},
		}},
		{CompanyID: coB, Entries: []audit.EntryRecord{
			{ID: ms(time.Minute) + "-0", Fields: map[string]string{"time": ms(time.Minute), "actor": "rui@ops", "action": audit.ActionLimitsReset}},
		}},
	}}
}

// asFormat2 is a plain file of the plane as a gateway of format 2 wrote
// it, with s as its audit part, signed with the plane's key.
func (p *plane) asFormat2(plain []byte, s audit.State) []byte {
	p.t.Helper()
	head := bytes.IndexByte(plain, '\n') + 1
	sig := bytes.LastIndex(plain, []byte("\nsignature "))
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(plain[head:sig], &doc); err != nil {
		p.t.Fatal(err)
	}
	var parts map[string]json.RawMessage
	if err := json.Unmarshal(doc["parts"], &parts); err != nil {
		p.t.Fatal(err)
	}
	parts["audit"], _ = json.Marshal(s)
	doc["parts"], _ = json.Marshal(parts)
	doc["format"] = json.RawMessage("2")
	body, _ := json.Marshal(doc)
	out := append([]byte("invoicing-gateway-state 2 plain\n"), body...)
	return p.resign(append(out, plain[sig:]...))
}

// auditCount is how many entries the plane's audit log holds.
func (p *plane) auditCount() int64 {
	p.t.Helper()
	var n int64
	if err := sqldb.QueryRow(context.Background(), p.auditDB.Read(), "SELECT count(*) FROM audit_entries", nil, &n); err != nil {
		p.t.Fatal(err)
	}
	return n
}
