package audit

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"
)

// olderExport is the audit part of an export made before the log moved to
// the database: company A's entries at now, one past the retention.
func olderExport(now time.Time) State {
	ms := func(d time.Duration) string { return strconv.FormatInt(now.Add(-d).UnixMilli(), 10) }
	return State{Version: StateVersion, Companies: []StreamRecord{{CompanyID: companyA, Entries: []EntryRecord{
		{ID: ms(500*24*time.Hour) + "-0", Fields: map[string]string{"time": ms(500 * 24 * time.Hour), "actor": "old@ops", "action": ActionLimitsSet}},
		{ID: ms(time.Hour) + "-0", Fields: map[string]string{"time": ms(time.Hour), "actor": "ana@ops", "action": ActionKeyCreated, "key": "key_aaaaaaaaaaaaaaaaaaaa"}},
		{ID: ms(time.Hour) + "-1", Fields: map[string]string{"time": ms(time.Hour), "actor": "rui@ops", "action": ActionLimitsReset, "after": `{"burst":5}`}},
	}}}}
}

// testImportOlderExport: an older export's audit part is merged into the
// log by id (the union: an entry the log has is left as it is), with the
// import's own entries in the same transaction; importing again adds
// nothing.
func testImportOlderExport(t *testing.T, h *harness) {
	l := h.log(Config{})
	s := olderExport(h.clock.Now())
	have := mustRecord(t, l, entry(ActionLimitsSet, "", nil, nil)) // recorded here, after the export
	// The log has one of the file's entries already (restored before).
	r, _ := s.Companies[0].Entries[1].row(companyA)
	if _, err := l.copyRows(ctx, companyA, []row{r}, r.seq); err != nil {
		t.Fatal(err)
	}
	p, err := l.PlanImport(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if a, u, n := p.Counts(); a != 1 || u != 0 || n != 1 {
		t.Errorf("plan counts: %d added, %d updated, %d unchanged; want 1, 0, 1 (the one past the retention not brought back)", a, u, n)
	}
	e := entry(ActionStateImported, "", nil, map[string]int{"audit": 1})
	e.KeyID = ""
	ep, err := l.PlanEntries(ctx, []Entry{e})
	if err != nil {
		t.Fatal(err)
	}
	wrote := false
	err = p.Around(ctx, func(ctx context.Context) error {
		return ep.Around(ctx, func(context.Context) error { wrote = true; return nil })
	})
	if err != nil || !wrote {
		t.Fatalf("import: %v (Redis's writes made: %v)", err, wrote)
	}
	evs := readAll(t, l, companyA, time.Time{})
	var actions []string
	for _, ev := range evs {
		actions = append(actions, ev.Actor+" "+ev.Action)
	}
	want := "[ana@ops key.created rui@ops limits.reset ana@platform limits.set ana@platform state.imported]"
	if got := "[" + join(actions) + "]"; got != want {
		t.Errorf("the log after the import: %s, want %s", got, want)
	}
	if evs[2].ID != have.ID {
		t.Errorf("the entry recorded before the import has id %s, was %s", evs[2].ID, have.ID)
	}
	again, err := l.PlanImport(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if a, _, n := again.Counts(); a != 0 || n != 2 {
		t.Errorf("a second import's plan: %d added, %d unchanged", a, n)
	}
}

// testImportRolledBack: when the import's Redis writes fail, neither the
// older export's entries nor the import's own are committed.
func testImportRolledBack(t *testing.T, h *harness) {
	l := h.log(Config{})
	p, err := l.PlanImport(ctx, olderExport(h.clock.Now()))
	if err != nil {
		t.Fatal(err)
	}
	ep, err := l.PlanEntries(ctx, []Entry{entry(ActionStateImported, "", nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("Redis refused the transaction")
	err = p.Around(ctx, func(ctx context.Context) error {
		return ep.Around(ctx, func(context.Context) error { return boom })
	})
	if !errors.Is(err, boom) {
		t.Fatalf("import whose Redis writes failed: %v", err)
	}
	if n := h.count("audit_entries"); n != 0 {
		t.Errorf("%d entries committed by an import whose Redis writes failed", n)
	}
	// A file with an entry the log would not have made is refused whole.
	bad := olderExport(h.clock.Now())
	bad.Companies[0].Entries[2].ID = "12-1000"
	if _, err := l.PlanImport(ctx, bad); !errors.Is(err, ErrInvalidState) {
		t.Errorf("an id the log cannot hold: %v", err)
	}
}

func join(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += " "
		}
		out += v
	}
	return out
}
