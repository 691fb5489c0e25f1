package history

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The conformance suite: every behaviour of the Store, held on both
// engines by the same tests (conformance, run by TestPostgres and
// TestSQLite). A test gets a store of its own on a database of its own,
// with a clock it moves.

// harness is a store under test, its database and its clock.
type harness struct {
	Store
	db    *sqldb.DB
	clock *testenv.Clock
}

// opener makes a store on a new database with cfg (its Now set to the
// harness's clock).
type opener func(t *testing.T, cfg Config) *harness

// t0 is when each test's clock starts.
var t0 = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func openWith(t testing.TB, url string, cfg Config) *harness {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, sqldb.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Apply(ctx, Migrations()); err != nil {
		t.Fatal(err)
	}
	h := &harness{db: db, clock: testenv.NewClock(t0)}
	cfg.Now = h.clock.Now
	s, err := New(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.Store = s
	return h
}

func openPostgres(t *testing.T, cfg Config) *harness {
	return openWith(t, testenv.Postgres(t), cfg)
}

func openSQLite(t *testing.T, cfg Config) *harness {
	return openWith(t, "sqlite:"+filepath.Join(t.TempDir(), "history.db"), cfg)
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	conformance(t, openPostgres)
}

func TestSQLite(t *testing.T) {
	t.Parallel()
	conformance(t, openSQLite)
}

// conformance runs every test of the suite against the stores open makes.
func conformance(t *testing.T, open opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open opener)
	}{
		{"Migrations", testMigrations},
		{"RecordComparesAndSets", testRecordComparesAndSets},
		{"RecordConcurrentFeedInCommitOrder", testRecordConcurrent},
		{"RecordSeqGrows", testRecordSeqGrows},
		{"RecordDedups", testRecordDedups},
		{"RefoundDeliveries", testRefoundDeliveries},
		{"FeedPages", testFeedPages},
		{"FeedFilters", testFeedFilters},
		{"FeedRefusesHostilePositions", testFeedHostile},
		{"FeedExpiredCursor", testFeedExpired},
		{"DeliveriesFetchComplete", testFetchComplete},
		{"DeliveryLog", testDeliveryLog},
		{"Requeue", testRequeue},
		{"TestAndPending", testTestAndPending},
		{"Watermarks", testWatermarks},
		{"Maintenance", testMaintenance},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open)
		})
	}
}

// Companies and endpoints of the tests.
const (
	coA = "0a1b2c3d-0000-4000-8000-00000000000a"
	coB = "0a1b2c3d-0000-4000-8000-00000000000b"
)

// ev is an event of company co in LIVE, of type typ, routed to eps; its
// body names it.
func ev(co, id, typ string, eps ...string) Event {
	return Event{ID: id, CompanyID: co, Mode: invoicing.Live, Type: typ, ResourceID: "res-" + id,
		Body: []byte(`{"type":"` + typ + `","id":"` + id + `"}`), Cause: "00-cause-" + id, Endpoints: eps}
}

// events are n events of co, ids prefix0…, types cycling through types.
func events(co, prefix string, n int, types ...string) []Event {
	if len(types) == 0 {
		types = []string{"invoice.paid"}
	}
	out := make([]Event, n)
	for i := range out {
		out[i] = ev(co, prefix+strconv.Itoa(i), types[i%len(types)])
	}
	return out
}

func record(t *testing.T, h *harness, b Batch) Recorded {
	t.Helper()
	r, err := h.Record(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func feedQuery(co string, limit int) invoicing.FeedQuery {
	return invoicing.FeedQuery{CompanyID: co, Mode: invoicing.Live, Limit: limit}
}

// walk reads a feed page by page from q, and returns the ids in order.
func walk(t *testing.T, h *harness, q invoicing.FeedQuery) []string {
	t.Helper()
	var ids []string
	for range 10000 {
		p, err := h.ReadFeed(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Rows {
			ids = append(ids, r.EventID)
		}
		if !p.HasMore {
			return ids
		}
		q.After = p.Next
	}
	t.Fatal("the walk did not end")
	return nil
}

func ids(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func same(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func testMigrations(t *testing.T, open opener) {
	h := open(t, Config{})
	ctx := context.Background()
	// open applied them on an empty database; again is nothing to do.
	if done, err := h.db.Apply(ctx, Migrations()); err != nil || len(done) != 0 {
		t.Errorf("applying again: %v, %v", done, err)
	}
	if pending, err := h.db.Check(ctx, Migrations()); err != nil || len(pending) != 0 {
		t.Errorf("pending after Apply: %v, %v", pending, err)
	}
	// Every table's key leads with the company, but the watermarks'.
	for _, table := range []string{"feed_heads", "feed_cuts", "events", "event_marks", "deliveries", "delivery_attempts"} {
		if got := primaryKey(t, h, table); len(got) == 0 || got[0] != "company_id" {
			t.Errorf("%s's key is %v: it must lead with company_id", table, got)
		}
	}
}

// primaryKey is a table's primary key's columns, in order.
func primaryKey(t *testing.T, h *harness, table string) []string {
	t.Helper()
	q := `SELECT a.attname FROM pg_index i JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, pos) ON true
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = $1::text::regclass AND i.indisprimary ORDER BY k.pos`
	if h.db.Engine() == sqldb.SQLite {
		q = "SELECT name FROM pragma_table_info($1) WHERE pk > 0 ORDER BY pk"
	}
	rows, err := h.db.Read().Query(context.Background(), q, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}
