package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

var ctx = context.Background()

const (
	companyA = "0b7e3c6a-5f1d-4c1e-9a51-2d3f4e5a6b7c"
	companyB = "7d1f0e2a-9c3b-4d5e-8f60-718293a4b5c6"
)

func newClock() *testenv.Clock {
	return testenv.NewClock(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
}

// The conformance suite: every behaviour of the Log, held on both engines
// by the same tests (run by TestPostgres and TestSQLite). Each test gets a
// database of its own, its schema applied, and a clock it moves.

// harness is a database under test and the clock its logs read.
type harness struct {
	t     *testing.T
	db    *sqldb.DB
	clock *testenv.Clock
}

// log is a Log on the harness's database (its clock unless cfg has one).
func (h *harness) log(cfg Config) *Log {
	cfg.DB = h.db
	if cfg.Now == nil {
		cfg.Now = h.clock.Now
	}
	return New(cfg)
}

// count is how many rows a table of the log holds.
func (h *harness) count(table string) int64 {
	h.t.Helper()
	var n int64
	if err := sqldb.QueryRow(ctx, h.db.Read(), "SELECT count(*) FROM "+table, nil, &n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// opener makes a harness on a new database.
type opener func(t *testing.T) *harness

func openWith(t *testing.T, url string) *harness {
	t.Helper()
	db, err := sqldb.Open(ctx, sqldb.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Apply(ctx, Migrations()); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, db: db, clock: newClock()}
}

func openPostgres(t *testing.T) *harness { return openWith(t, testenv.Postgres(t)) }

func openSQLite(t *testing.T) *harness {
	return openWith(t, "sqlite:"+filepath.Join(t.TempDir(), "audit.db"))
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	conformance(t, openPostgres)
}

func TestSQLite(t *testing.T) {
	t.Parallel()
	conformance(t, openSQLite)
}

// conformance runs every test of the suite against the databases open
// makes.
func conformance(t *testing.T, open opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"RecordAndRead", testRecordRead},
		{"RefusedEntries", testRefused},
		{"ClocksApart", testClocksApart},
		{"SinceAndPaging", testPaging},
		{"ConcurrentWritersInCommitOrder", testConcurrent},
		{"Retention", testRetention},
		{"Bounded", testBounded},
		{"BoundAfterRetention", testBoundAfterRetention},
		{"Unavailable", testUnavailable},
		{"UpgradeFromRedis", testUpgrade},
		{"UpgradeSeveralAtOnce", testUpgradeTogether},
		{"ImportOlderExport", testImportOlderExport},
		{"ImportRolledBack", testImportRolledBack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

func entry(action, key string, before, after any) Entry {
	raw := func(v any) json.RawMessage {
		if v == nil {
			return nil
		}
		b, _ := json.Marshal(v)
		return b
	}
	return Entry{Actor: "ana@platform", CompanyID: companyA, Action: action, KeyID: key, Before: raw(before), After: raw(after)}
}

func mustRecord(t *testing.T, l *Log, e Entry) Event {
	t.Helper()
	ev, err := l.Record(ctx, e)
	if err != nil {
		t.Fatalf("Record(%+v): %v", e, err)
	}
	return ev
}

func readAll(t *testing.T, l *Log, company string, since time.Time) []Event {
	t.Helper()
	evs, next, err := l.Read(ctx, company, since, MaxRead)
	if err != nil || !next.IsZero() {
		t.Fatalf("Read = %d events, next %v, %v", len(evs), next, err)
	}
	return evs
}

func testRecordRead(t *testing.T, h *harness) {
	c := h.clock
	l := h.log(Config{})
	created := mustRecord(t, l, entry(ActionKeyCreated, "key_aaaaaaaaaaaaaaaaaaaa", nil, map[string]any{"state": "active", "hint": "igw_live_…x9Qa"}))
	c.Add(time.Second)
	mustRecord(t, l, entry(ActionKeyRevoked, "key_aaaaaaaaaaaaaaaaaaaa", map[string]string{"state": "active"}, map[string]string{"state": "revoked"}))
	limits := mustRecord(t, l, entry(ActionLimitsSet, "", map[string]int{"burst": 100}, map[string]int{"burst": 5}))
	other := entry(ActionLimitsReset, "", nil, nil)
	other.CompanyID = companyB
	mustRecord(t, l, other)

	evs := readAll(t, l, companyA, time.Time{})
	if len(evs) != 3 {
		t.Fatalf("Read = %d events, want 3 (the other company's apart)", len(evs))
	}
	want := []struct{ action, key, before, after string }{
		{ActionKeyCreated, "key_aaaaaaaaaaaaaaaaaaaa", "", `{"hint":"igw_live_…x9Qa","state":"active"}`},
		{ActionKeyRevoked, "key_aaaaaaaaaaaaaaaaaaaa", `{"state":"active"}`, `{"state":"revoked"}`},
		{ActionLimitsSet, "", `{"burst":100}`, `{"burst":5}`},
	}
	for i, ev := range evs {
		key := ""
		if ev.KeyID != nil {
			key = *ev.KeyID
		}
		if ev.Action != want[i].action || key != want[i].key || string(ev.Before) != want[i].before ||
			string(ev.After) != want[i].after || ev.Actor != "ana@platform" || ev.CompanyID != companyA {
			t.Errorf("event %d = %+v (before %s, after %s)", i, ev, ev.Before, ev.After)
		}
		if i > 0 && !(ev.ID > evs[i-1].ID || len(ev.ID) > len(evs[i-1].ID)) {
			t.Errorf("ids do not grow: %s after %s", ev.ID, evs[i-1].ID)
		}
	}
	if !evs[0].Time.Equal(c.Now().Add(-time.Second)) || evs[0].ID != created.ID || evs[2].ID != limits.ID {
		t.Errorf("times or ids differ from Record's: %+v", evs)
	}
	b, _ := json.Marshal(evs[2])
	if !strings.Contains(string(b), `"keyId":null`) || !strings.Contains(string(b), `"webhookId":null`) {
		t.Errorf("a limits event shows a key or a webhook: %s", b)
	}
	// A webhook endpoint's change names the endpoint.
	w := entry(ActionWebhookCreated, "", nil, map[string]string{"url": "https://hooks.example.com/w"})
	w.WebhookID = "ep_aaaaaaaaaaaaaaaaaaaaaaaaaa"
	mustRecord(t, l, w)
	if evs := readAll(t, l, companyA, time.Time{}); len(evs) != 4 || evs[3].WebhookID == nil || *evs[3].WebhookID != w.WebhookID || evs[3].KeyID != nil {
		t.Errorf("the webhook's event reads back as %+v", evs[len(evs)-1])
	}
	if evs, _, _ := l.Read(ctx, companyB, time.Time{}, MaxRead); len(evs) != 1 || evs[0].Before != nil {
		t.Errorf("other company: %+v", evs)
	}
	if evs, _, _ := l.Read(ctx, "11111111-2222-4333-8444-555555555555", time.Time{}, MaxRead); len(evs) != 0 {
		t.Errorf("a company without events: %+v", evs)
	}
}

func testRefused(t *testing.T, h *harness) {
	l := h.log(Config{})
	secret := "igw_live_" + strings.Repeat("a1B2", 10) + "xyz"
	edit := func(f func(*Entry)) Entry {
		e := entry(ActionKeyCreated, "key_aaaaaaaaaaaaaaaaaaaa", nil, map[string]string{"state": "active"})
		f(&e)
		return e
	}
	for name, e := range map[string]Entry{
		"no actor":                  edit(func(e *Entry) { e.Actor = " " }),
		"long actor":                edit(func(e *Entry) { e.Actor = strings.Repeat("a", MaxActorLen+1) }),
		"control in actor":          edit(func(e *Entry) { e.Actor = "ana\nINFO forged" }),
		"actor is a key":            edit(func(e *Entry) { e.Actor = secret }),
		"actor is a webhook secret": edit(func(e *Entry) { e.Actor = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }),
		"actor is a filler":         edit(func(e *Entry) { e.Actor = "\u3164" }),
		"filler in actor":           edit(func(e *Entry) { e.Actor = "ana\u115f" }),
		"upper-case id":             edit(func(e *Entry) { e.CompanyID = strings.ToUpper(companyA) }),
		"not a company":             edit(func(e *Entry) { e.CompanyID = "acme" }),
		"unknown action":            edit(func(e *Entry) { e.Action = "key.deleted" }),
		"expiry recorded":           edit(func(e *Entry) { e.Action = ActionKeyExpired }),
		"secret in after":           edit(func(e *Entry) { e.After = json.RawMessage(`{"key":"` + secret + `"}`) }),
		"secret in before":          edit(func(e *Entry) { e.Before = json.RawMessage(`{"key":"` + strings.ToUpper(secret) + `"}`) }),
		"webhook secret":            edit(func(e *Entry) { e.After = json.RawMessage(`{"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`) }),
		"before is no JSON":         edit(func(e *Entry) { e.Before = json.RawMessage(`{"state":`) }),
		"after is not UTF-8":        edit(func(e *Entry) { e.After = json.RawMessage("{\"name\":\"\xff\"}") }),
		"a key id with a NUL":       edit(func(e *Entry) { e.KeyID = "key_\x00" }),
	} {
		if _, err := l.Record(ctx, e); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Record = %v, want ErrInvalid", name, err)
		}
	}
	if n := h.count("audit_entries") + h.count("audit_heads"); n != 0 {
		t.Errorf("refused entries wrote %d rows", n)
	}
	for _, ok := range []string{"ana@platform", "Zé Manuel (dashboard)", "root@gw-7f9c"} {
		if err := CheckActor(ok); err != nil {
			t.Errorf("CheckActor(%q) = %v", ok, err)
		}
	}
	if _, _, err := l.Read(ctx, companyA, time.Time{}, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("Read with limit 0 = %v", err)
	}
	if _, _, err := l.Read(ctx, "acme", time.Time{}, 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("Read of a bad company = %v", err)
	}
}

// testClocksApart: an instance whose clock is behind still appends after
// the company's last event, so ids and the order of reading always grow.
func testClocksApart(t *testing.T, h *harness) {
	ahead, behind := newClock(), newClock()
	behind.Add(-5 * time.Second)
	a := h.log(Config{Now: ahead.Now})
	b := h.log(Config{Now: behind.Now})
	first := mustRecord(t, a, entry(ActionLimitsSet, "", nil, nil))
	second := mustRecord(t, b, entry(ActionLimitsReset, "", nil, nil))
	third := mustRecord(t, b, entry(ActionLimitsReset, "", nil, nil))
	evs := readAll(t, a, companyA, time.Time{})
	if len(evs) != 3 || evs[0].ID != first.ID || evs[1].ID != second.ID || evs[2].ID != third.ID {
		t.Fatalf("events out of order: %+v", evs)
	}
	if !strings.HasPrefix(second.ID, fmt.Sprint(ahead.Now().UnixMilli())+"-") {
		t.Errorf("id %s of the late clock, want it after %s", second.ID, first.ID)
	}
	if !evs[1].Time.Equal(behind.Now()) {
		t.Errorf("the event's time is not its recorder's: %v", evs[1].Time)
	}
	// An event that happened earlier keeps its time, and still comes last.
	late := entry(ActionKeyRevoked, "key_aaaaaaaaaaaaaaaaaaaa", nil, nil)
	late.Time = ahead.Now().Add(-time.Minute)
	fourth := mustRecord(t, a, late)
	evs = readAll(t, a, companyA, time.Time{})
	if len(evs) != 4 || evs[3].ID != fourth.ID || !evs[3].Time.Equal(late.Time) || !fourth.Time.Equal(late.Time) {
		t.Errorf("a late event: %+v", evs)
	}
}

func testPaging(t *testing.T, h *harness) {
	c := h.clock
	l := h.log(Config{})
	t0 := c.Now()
	var all []Event
	for i := range 5 {
		c.Set(t0.Add(time.Duration(i/2) * time.Hour)) // two events share each hour
		all = append(all, mustRecord(t, l, entry(ActionLimitsSet, "", nil, map[string]int{"n": i})))
	}
	if evs := readAll(t, l, companyA, t0.Add(time.Hour)); len(evs) != 3 || evs[0].ID != all[2].ID {
		t.Errorf("since the second hour: %+v", evs)
	}
	// Paging: each page starts where the last one said, and none ends
	// inside a millisecond, so no event is repeated or skipped.
	var got []string
	since, pages := time.Time{}, 0
	for ; pages < 10; pages++ {
		evs, next, err := l.Read(ctx, companyA, since, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			got = append(got, ev.ID)
		}
		if next.IsZero() {
			break
		}
		since = next
	}
	if len(got) != 5 || got[0] != all[0].ID || got[4] != all[4].ID || pages != 2 {
		t.Errorf("paged through %v in %d pages, want the 5 events in order in 3", got, pages+1)
	}
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] {
			t.Errorf("event %s read twice", got[i])
		}
	}
}

// What the log refuses is what HoldsSecret finds, whatever surrounds it; a
// state recorded with such text in it (from before it was refused at the
// edge) is taken once Redact has replaced it, and nothing of the secret is
// left, the checksum included.
func TestHoldsSecretAndRedact(t *testing.T) {
	t.Parallel()
	key := "igw_live_" + strings.Repeat("a1B2", 10) + "xyz" + "0Ab9Zq"
	whsec := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw+/=="
	for s, want := range map[string]bool{
		key: true, "backup " + key + " (old)": true, strings.ToUpper(key): true, "igw_test_" + strings.Repeat("z", 20): true,
		whsec: true, "https://hooks.example.com/w?s=" + whsec: true,
		"igw_live_…x9Qa": false, "igw_live_" + strings.Repeat("a", 19): false, "whsec_short": false, "ERP produção": false,
	} {
		if got := HoldsSecret(s); got != want {
			t.Errorf("HoldsSecret(%q) = %v", s, got)
		}
	}
	doc := []byte(`{"name":"backup ` + key + `","url":"https://h.example/w?s=` + whsec + `","hint":"igw_live_…x9Qa"}`)
	red := Redact(doc)
	if want := `{"name":"backup [redacted]","url":"https://h.example/w?s=[redacted]","hint":"igw_live_…x9Qa"}`; string(red) != want {
		t.Errorf("Redact = %s, want %s", red, want)
	}
	if clean := []byte(`{"name":"ERP"}`); &Redact(clean)[0] != &clean[0] {
		t.Error("Redact copied a document without a secret")
	}
	e := entry(ActionKeyCreated, "key_aaaaaaaaaaaaaaaaaaaa", nil, nil)
	e.After = red
	if err := e.check(); err != nil {
		t.Errorf("a redacted state is refused: %v", err)
	}
}
