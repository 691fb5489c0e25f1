package audit

import (
	"errors"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The conformance suite's tests of time, bounds, concurrency and outages
// (audit_test.go runs them on both engines).

// testRetention: an event 400 days old is no longer read; maintenance
// then removes it (PostgreSQL drops its partition once the partition is
// wholly past the retention; SQLite deletes it), and never a newer one.
func testRetention(t *testing.T, h *harness) {
	c := h.clock
	l := h.log(Config{})
	mustRecord(t, l, entry(ActionLimitsSet, "", nil, nil))
	c.Add(DefaultRetention - time.Millisecond)
	if evs := readAll(t, l, companyA, time.Time{}); len(evs) != 1 {
		t.Fatalf("an event 400 days old but for a millisecond: %d", len(evs))
	}
	c.Add(time.Millisecond)
	if evs := readAll(t, l, companyA, time.Time{}); len(evs) != 0 {
		t.Errorf("an event of 400 days ago is still read: %+v", evs)
	}
	recent := mustRecord(t, l, entry(ActionLimitsReset, "", nil, nil))
	c.Add(31 * 24 * time.Hour) // the old event's partition, of 30 days, is now wholly past
	m, err := l.Maintain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.db.Engine() == sqldb.Postgres && len(m.Dropped) == 0 || h.db.Engine() == sqldb.SQLite && m.Deleted != 1 {
		t.Errorf("maintenance: %+v", m)
	}
	if n := h.count("audit_entries"); n != 1 {
		t.Errorf("%d entries kept after maintenance, want the recent one", n)
	}
	if evs := readAll(t, l, companyA, time.Time{}); len(evs) != 1 || evs[0].ID != recent.ID {
		t.Errorf("after maintenance: %+v", evs)
	}
	if h.db.Engine() == sqldb.Postgres {
		parts, err := h.db.Partitions(ctx, entriesRanges)
		if err != nil {
			t.Fatal(err)
		}
		last := parts[len(parts)-1]
		if len(parts) > 17 || time.UnixMilli(last.To/perMs).Before(c.Now().Add(59*24*time.Hour)) {
			t.Errorf("partitions after maintenance: %d, the last to %v", len(parts), time.UnixMilli(last.To/perMs).UTC())
		}
	}
}

func testBounded(t *testing.T, h *harness) {
	c := h.clock
	l := h.log(Config{MaxPerCompany: 5})
	var last []Event
	for i := range 12 {
		c.Add(time.Millisecond)
		last = append(last, mustRecord(t, l, entry(ActionLimitsSet, "", nil, map[string]int{"n": i})))
	}
	other := entry(ActionLimitsReset, "", nil, nil)
	other.CompanyID = companyB
	mustRecord(t, l, other)
	evs := readAll(t, l, companyA, time.Time{})
	if len(evs) != 5 || evs[0].ID != last[7].ID || evs[4].ID != last[11].ID {
		t.Errorf("bounded log holds %d events from %v, want the newest 5", len(evs), evs)
	}
	if evs := readAll(t, l, companyB, time.Time{}); len(evs) != 1 {
		t.Errorf("another company's log: %+v", evs)
	}
}

// testBoundAfterRetention: entries the retention removed no longer count
// against the bound, and the bound still keeps the newest.
func testBoundAfterRetention(t *testing.T, h *harness) {
	c := h.clock
	l := h.log(Config{MaxPerCompany: 5})
	for range 3 {
		mustRecord(t, l, entry(ActionLimitsSet, "", nil, nil))
	}
	c.Add(DefaultRetention + 31*24*time.Hour)
	if _, err := l.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 6 {
		c.Add(time.Millisecond)
		ids = append(ids, mustRecord(t, l, entry(ActionLimitsSet, "", nil, map[string]int{"n": i})).ID)
		if evs := readAll(t, l, companyA, time.Time{}); len(evs) != min(i+1, 5) {
			t.Fatalf("after %d new entries, %d read: %+v", i+1, len(evs), evs)
		}
	}
	if evs := readAll(t, l, companyA, time.Time{}); evs[0].ID != ids[1] || evs[4].ID != ids[5] {
		t.Errorf("the bound kept %v, want the newest 5 of %v", evs, ids)
	}
}

// testConcurrent: writers of one company on two instances at once, all at
// the same millisecond, while a reader reads again and again: every id is
// distinct, and every read is a beginning of the final order (a reader
// that sees an entry has seen every earlier one, however commits
// interleave).
func testConcurrent(t *testing.T, h *harness) {
	a, b := h.log(Config{}), h.log(Config{})
	const writers, each = 4, 25
	done := make(chan struct{})
	var reads [][]string
	go func() {
		defer close(done)
		for len(reads) < 1000 {
			evs, _, err := a.Read(ctx, companyA, time.Time{}, MaxRead)
			if err != nil {
				t.Error(err)
				return
			}
			ids := make([]string, len(evs))
			for i, e := range evs {
				ids[i] = e.ID
			}
			reads = append(reads, ids)
			if len(ids) == writers*each {
				return
			}
		}
	}()
	errs := make(chan error, writers)
	for w := range writers {
		l := []*Log{a, b}[w%2]
		go func() {
			for range each {
				if _, err := l.Record(ctx, entry(ActionLimitsSet, "", nil, nil)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	<-done
	final := readAll(t, a, companyA, time.Time{})
	if len(final) != writers*each {
		t.Fatalf("%d entries, want %d", len(final), writers*each)
	}
	seen := map[string]bool{}
	for _, e := range final {
		if seen[e.ID] {
			t.Fatalf("id %s twice", e.ID)
		}
		seen[e.ID] = true
	}
	for _, r := range reads {
		for i, id := range r {
			if final[i].ID != id {
				t.Fatalf("a read saw %s at %d before the entry recorded there (%s): a late commit skipped", id, i, final[i].ID)
			}
		}
	}
}

// testUnavailable: a database that cannot answer, or that the binary has
// not said is ready, is ErrUnavailable, for a record and a read alike.
func testUnavailable(t *testing.T, h *harness) {
	notYet := errors.New("its migrations are not applied yet")
	gated := h.log(Config{Ready: func() error { return notYet }})
	if _, err := gated.Record(ctx, entry(ActionLimitsSet, "", nil, nil)); !errors.Is(err, ErrUnavailable) || !errors.Is(err, notYet) {
		t.Errorf("Record before the database is ready = %v", err)
	}
	if _, _, err := gated.Read(ctx, companyA, time.Time{}, 1); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Read before the database is ready = %v", err)
	}
	if err := gated.Ready(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Ready before the database is ready = %v", err)
	}
	if n := h.count("audit_heads"); n != 0 {
		t.Errorf("a record before the database is ready wrote %d heads", n)
	}
	l := h.log(Config{})
	if err := l.Ready(ctx); err != nil {
		t.Errorf("Ready of a database that answers = %v", err)
	}
	h.db.Close()
	if _, err := l.Record(ctx, entry(ActionLimitsSet, "", nil, nil)); !errors.Is(err, ErrUnavailable) || invoicing.KindOf(err) != invoicing.Unavailable {
		t.Errorf("Record without the database = %v", err)
	}
	if _, _, err := l.Read(ctx, companyA, time.Time{}, 1); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Read without the database = %v", err)
	}
	if err := l.Ready(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Ready without the database = %v", err)
	}
}
