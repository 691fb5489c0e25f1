package history

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// planNode is a node of EXPLAIN (FORMAT JSON)'s plan.
type planNode struct {
	NodeType        string     `json:"Node Type"`
	Relation        string     `json:"Relation Name"`
	Index           string     `json:"Index Name"`
	ActualRows      float64    `json:"Actual Rows"`
	ActualLoops     float64    `json:"Actual Loops"`
	RemovedByFilter float64    `json:"Rows Removed by Filter"`
	SubplansRemoved int        `json:"Subplans Removed"`
	Plans           []planNode `json:"Plans"`
}

func (n planNode) walk(fn func(planNode)) {
	fn(n)
	for _, c := range n.Plans {
		c.walk(fn)
	}
}

// explain runs EXPLAIN of sql with args and returns its plan's root.
func explain(t *testing.T, h *harness, opts, sql string, args []any) planNode {
	t.Helper()
	var raw []byte
	if err := h.db.Pool().QueryRow(context.Background(), "EXPLAIN ("+opts+", FORMAT JSON) "+sql, args...).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var out []struct{ Plan planNode }
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
		t.Fatalf("EXPLAIN's JSON: %v, %s", err, raw)
	}
	return out[0].Plan
}

// literal is an argument as SQL text, for EXECUTE.
func literal(a any) string {
	switch v := a.(type) {
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case int64:
		return strconv.FormatInt(v, 10)
	}
	panic(fmt.Sprintf("literal of %T", a))
}

// TestFeedPagesReadWhatTheyReturn holds the feed's queries, on a feed of
// 60,000 events over 20 days beside two other companies', to their plans:
// ordered index scans (no Sort, no sequential or bitmap scan), each
// reading at most the page's rows (+1, to tell whether more follow) and
// filtering none out, and since/until reading only their partitions. The
// generic plan (what a prepared statement settles on) is held too: no
// Sort, and the partitions outside the bounds pruned at its start.
func TestFeedPagesReadWhatTheyReturn(t *testing.T) {
	t.Parallel()
	h := openPostgres(t, Config{})
	from := t0.Add(-20 * 24 * time.Hour)
	loadFeed(t, h, coA, 60000, from, t0)
	loadFeed(t, h, coB, 20000, from, t0)
	loadFeed(t, h, "0a1b2c3d-0000-4000-8000-00000000000c", 20000, from, t0)
	mid := invoicing.FeedPosition{Ms: uint64(t0.Add(-10 * 24 * time.Hour).UnixMilli())}
	day, dayEnd := t0.Add(-5*24*time.Hour), t0.Add(-4*24*time.Hour)
	shapes := []struct {
		name   string
		q      invoicing.FeedQuery
		bounds bool // since/until within one day: at most 2 partitions read
	}{
		{name: "oldest", q: invoicing.FeedQuery{}},
		{name: "oldest after a cursor", q: invoicing.FeedQuery{After: &mid}},
		{name: "newest", q: invoicing.FeedQuery{Newest: true}},
		{name: "newest after a cursor", q: invoicing.FeedQuery{Newest: true, After: &mid}},
		{name: "one type", q: invoicing.FeedQuery{Types: []string{"invoice.issued"}}},
		{name: "a rare type", q: invoicing.FeedQuery{Types: []string{"invoice.cancelled"}, After: &mid}},
		{name: "three types after a cursor", q: invoicing.FeedQuery{Types: []string{"invoice.cancelled", "client.created", "invoice.issued"}, After: &mid}},
		{name: "two types newest", q: invoicing.FeedQuery{Types: []string{"invoice.paid", "client.created"}, Newest: true}},
		{name: "since and until", q: invoicing.FeedQuery{Since: &day, Until: &dayEnd}, bounds: true},
		{name: "since, until and types newest", q: invoicing.FeedQuery{Since: &day, Until: &dayEnd, Types: []string{"invoice.issued", "client.created"}, Newest: true}, bounds: true},
	}
	for _, sh := range shapes {
		q := sh.q
		q.CompanyID, q.Mode, q.Limit = coA, invoicing.Live, 100
		types, err := checkFeedQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi, _, err := feedBounds(q)
		if err != nil {
			t.Fatal(err)
		}
		sql, args := feedSQL(q.CompanyID, q.Mode, types, q.Newest, lo, hi, q.Limit+1)
		root := explain(t, h, "ANALYZE, BUFFERS", sql, args)
		if root.NodeType != "Limit" {
			t.Errorf("%s: the plan's root is %s, want the page's Limit", sh.name, root.NodeType)
		}
		read, parts := 0.0, map[string]bool{}
		root.walk(func(n planNode) {
			switch n.NodeType {
			case "Sort", "Incremental Sort", "Seq Scan", "Bitmap Heap Scan":
				t.Errorf("%s: a %s on %s: the page must be read in order from an index", sh.name, n.NodeType, n.Relation)
			case "Index Scan", "Index Only Scan":
				read += n.ActualRows * max(n.ActualLoops, 1)
				parts[n.Relation] = true
				if n.RemovedByFilter > 0 {
					t.Errorf("%s: %s read %v rows it filtered out", sh.name, n.Index, n.RemovedByFilter)
				}
			}
		})
		if scans := float64(max(len(types), 1)); read == 0 || read > scans*float64(q.Limit+1) {
			t.Errorf("%s: the index scans read %v rows for a page of %d", sh.name, read, q.Limit)
		}
		if sh.bounds && len(parts) > 2 {
			t.Errorf("%s: read %d partitions for a day's bounds: %v", sh.name, len(parts), parts)
		}
		checkGenericPlan(t, h, sh.name, sql, args, sh.bounds)
	}
}

// checkGenericPlan holds the generic plan of a page's query (prepared, as
// pgx's statement cache does, and planned without its values) to no Sort,
// and, with since/until, partitions pruned at its start.
func checkGenericPlan(t *testing.T, h *harness, name, sql string, args []any, bounds bool) {
	t.Helper()
	ctx := context.Background()
	conn, err := h.db.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	lits := make([]string, len(args))
	params := make([]string, len(args))
	for i, a := range args {
		lits[i] = literal(a)
		params[i] = map[bool]string{true: "text", false: "bigint"}[strings.HasPrefix(lits[i], "'")]
	}
	params[0] = "uuid"
	stmts := []string{"SET plan_cache_mode = force_generic_plan",
		"PREPARE page(" + strings.Join(params, ", ") + ") AS " + sql}
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { _, _ = conn.Exec(ctx, "DEALLOCATE page; RESET plan_cache_mode") }()
	var raw []byte
	if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE page("+strings.Join(lits, ", ")+")").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var out []struct{ Plan planNode }
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	pruned := 0
	out[0].Plan.walk(func(n planNode) {
		pruned += n.SubplansRemoved
		if n.NodeType == "Sort" || n.NodeType == "Incremental Sort" || n.NodeType == "Seq Scan" {
			t.Errorf("%s, generic plan: a %s", name, n.NodeType)
		}
	})
	if bounds && pruned == 0 {
		t.Errorf("%s, generic plan: no partition pruned for since/until", name)
	}
}
