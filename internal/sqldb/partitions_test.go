package sqldb

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

var day0 = time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)

// logTable makes a table partitioned by positions (ms × 1000 + k).
func logTable(t *testing.T, db *DB) Ranges {
	t.Helper()
	ctx := context.Background()
	_, err := db.pg.Exec(ctx, `CREATE TABLE log (co uuid NOT NULL, seq bigint NOT NULL, body bytea NOT NULL, PRIMARY KEY (co, seq)) PARTITION BY RANGE (seq);
CREATE INDEX log_body ON log (co, body, seq)`)
	if err != nil {
		t.Fatal(err)
	}
	return Ranges{Table: "log", PerMs: 1000, With: "toast_tuple_target=256"}
}

// attached is what pg_inherits and pg_class say the table's partitions are.
func attached(t *testing.T, db *DB, table string) string {
	t.Helper()
	rows, err := db.pg.Query(context.Background(), `SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = $1::text::regclass ORDER BY c.relname`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name, bound string
		if err := rows.Scan(&name, &bound); err != nil {
			t.Fatal(err)
		}
		out = append(out, name+" "+bound)
	}
	return strings.Join(out, "\n")
}

func seqAt(t time.Time) int64 { return t.UnixMilli() * 1000 }

func TestPartitionsMadeAheadAndDroppedBehind(t *testing.T) {
	t.Parallel()
	db := openTestPostgres(t)
	ctx := context.Background()
	r := logTable(t, db)
	made, err := db.EnsurePartitions(ctx, r, day0.Add(-36*time.Hour), day0.Add(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(made) != "[log_20260308 log_20260309 log_20260310 log_20260311]" {
		t.Errorf("made %v", made)
	}
	want := fmt.Sprintf("log_20260310 FOR VALUES FROM ('%d') TO ('%d')", seqAt(day0), seqAt(day0.Add(24*time.Hour)))
	if got := attached(t, db, "log"); !strings.Contains(got, want) || strings.Count(got, "\n") != 3 {
		t.Errorf("pg_inherits says\n%s\nwant 4 partitions, among them %s", got, want)
	}
	// Each partition has the table's indexes and its storage parameters.
	var idx int64
	var opts []string
	if err := db.pg.QueryRow(ctx, "SELECT (SELECT count(*) FROM pg_indexes WHERE tablename = 'log_20260310'), (SELECT reloptions FROM pg_class WHERE relname = 'log_20260310')").Scan(&idx, &opts); err != nil {
		t.Fatal(err)
	}
	if idx != 2 || fmt.Sprint(opts) != "[toast_tuple_target=256]" {
		t.Errorf("a partition has %d indexes and options %v; want the table's 2 and toast_tuple_target=256", idx, opts)
	}
	// Again: nothing to make.
	if made, err := db.EnsurePartitions(ctx, r, day0.Add(-36*time.Hour), day0.Add(48*time.Hour)); err != nil || len(made) != 0 {
		t.Errorf("ensuring again made %v (%v)", made, err)
	}
	// Rows land in their partitions; one beyond them is refused as such.
	const co = "8d3c9a56-2f0e-4c7e-9d5e-1a2b3c4d5e6f"
	for _, at := range []time.Time{day0.Add(-30 * time.Hour), day0.Add(time.Hour), day0.Add(47 * time.Hour)} {
		if _, err := db.pg.Exec(ctx, "INSERT INTO log VALUES ($1, $2, 'x')", co, seqAt(at)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = db.pg.Exec(ctx, "INSERT INTO log VALUES ($1, $2, 'x')", co, seqAt(day0.Add(49*time.Hour)))
	if !NoPartition(err) {
		t.Errorf("a row beyond the partitions: %v, want NoPartition", err)
	}
	// Behind: the partitions wholly before the cutoff, oldest first.
	old, err := db.ExpiredPartitions(ctx, r, day0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(old) != 2 || old[0].Name != "log_20260308" || old[1].Name != "log_20260309" {
		t.Fatalf("expired before %s: %+v", day0.Add(time.Hour), old)
	}
	for _, p := range old {
		if err := db.DropPartition(ctx, r, p); err != nil {
			t.Fatal(err)
		}
	}
	if got := attached(t, db, "log"); strings.Contains(got, "log_20260308") || strings.Contains(got, "log_20260309") || strings.Count(got, "\n") != 1 {
		t.Errorf("after the drop pg_inherits says\n%s", got)
	}
	if tableExists(t, db, "log_20260308") {
		t.Error("a dropped partition's table is still there")
	}
	var n int64
	if err := db.pg.QueryRow(ctx, "SELECT count(*) FROM log").Scan(&n); err != nil || n != 2 {
		t.Errorf("%d rows left (%v), want the 2 of the kept partitions", n, err)
	}
}

func TestPartitionsFillGapsAroundOtherSpans(t *testing.T) {
	t.Parallel()
	db := openTestPostgres(t)
	ctx := context.Background()
	r := logTable(t, db)
	// A partition of six hours made earlier, mid-day.
	six := r
	six.Span = 6 * time.Hour
	if _, err := db.EnsurePartitions(ctx, six, day0.Add(6*time.Hour), day0.Add(7*time.Hour)); err != nil {
		t.Fatal(err)
	}
	made, err := db.EnsurePartitions(ctx, r, day0, day0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(made) != "[log_20260310 log_20260310_1200]" {
		t.Errorf("made %v around the six-hour partition", made)
	}
	ps, err := db.Partitions(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(ps); i++ {
		if ps[i-1].To != ps[i].From {
			t.Errorf("partitions %+v and %+v leave a gap or overlap", ps[i-1], ps[i])
		}
	}
	if len(ps) != 3 || ps[0].From != seqAt(day0) || ps[2].To != seqAt(day0.Add(24*time.Hour)) {
		t.Errorf("partitions %+v, want the day covered in 3", ps)
	}
}

func TestPartitionsDoNotWaitForTheTablesWriters(t *testing.T) {
	t.Parallel()
	db := openTestPostgres(t)
	ctx := context.Background()
	r := logTable(t, db)
	r.LockTimeout = 500 * time.Millisecond
	if _, err := db.EnsurePartitions(ctx, r, day0, day0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// A writer's transaction stays open on the table (ROW EXCLUSIVE).
	tx, err := db.pg.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "INSERT INTO log VALUES ('8d3c9a56-2f0e-4c7e-9d5e-1a2b3c4d5e6f', $1, 'x')", seqAt(day0)); err != nil {
		t.Fatal(err)
	}
	// Making the next day's partition does not need it to end (CREATE
	// TABLE … PARTITION OF would: it locks the table exclusively).
	if made, err := db.EnsurePartitions(ctx, r, day0, day0.Add(25*time.Hour)); err != nil || len(made) != 1 {
		t.Errorf("making a partition beside an open writer: %v, %v", made, err)
	}
}

func TestDroppedPartitionLeftDetachedIsDroppedNext(t *testing.T) {
	t.Parallel()
	db := openTestPostgres(t)
	ctx := context.Background()
	r := logTable(t, db)
	if _, err := db.EnsurePartitions(ctx, r, day0, day0.Add(48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// A drop cut off between its detach and its drop.
	if _, err := db.pg.Exec(ctx, "ALTER TABLE log DETACH PARTITION log_20260310"); err != nil {
		t.Fatal(err)
	}
	old, err := db.ExpiredPartitions(ctx, r, day0)
	if err != nil {
		t.Fatal(err)
	}
	if len(old) != 1 || old[0].Name != "log_20260310" || old[0].Attached {
		t.Fatalf("expired before the first day: %+v, want the detached one", old)
	}
	if err := db.DropPartition(ctx, r, old[0]); err != nil {
		t.Fatal(err)
	}
	if tableExists(t, db, "log_20260310") || !tableExists(t, db, "log_20260311") {
		t.Error("the detached partition was not dropped, or the other was")
	}
}

func TestPartitionsArePostgresOnly(t *testing.T) {
	t.Parallel()
	db := openTestSQLite(t)
	if _, err := db.EnsurePartitions(context.Background(), Ranges{Table: "log"}, day0, day0); err == nil {
		t.Error("SQLite made partitions")
	}
	if _, err := openTestPostgres(t).DeleteBefore(context.Background(), "log", "seq", 1, Batches{}); err == nil {
		t.Error("DeleteBefore ran on PostgreSQL, whose retention drops partitions")
	}
}

func TestDeleteBeforeInBoundedBatches(t *testing.T) {
	t.Parallel()
	db := openTestSQLite(t)
	ctx := context.Background()
	err := db.Tx(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, "CREATE TABLE log (seq bigint NOT NULL); CREATE INDEX log_seq ON log (seq)"); err != nil {
			return err
		}
		for i := range 2600 {
			if _, err := q.Exec(ctx, "INSERT INTO log VALUES ($1)", int64(i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b := Batches{Size: 1000, Max: 2}
	n, err := db.DeleteBefore(ctx, "log", "seq", 2500, b)
	if err != nil || n != 2000 {
		t.Fatalf("first call deleted %d (%v), want its bound of 2 batches of 1000", n, err)
	}
	if n, err = db.DeleteBefore(ctx, "log", "seq", 2500, b); err != nil || n != 500 {
		t.Fatalf("second call deleted %d (%v), want the 500 left", n, err)
	}
	var left, low int64
	if err := QueryRow(ctx, db.Read(), "SELECT count(*), min(seq) FROM log", nil, &left, &low); err != nil {
		t.Fatal(err)
	}
	if left != 100 || low != 2500 {
		t.Errorf("%d rows left from %d, want the 100 from 2500", left, low)
	}
	if _, err := db.DeleteBefore(ctx, "log; DROP TABLE log", "seq", 1, b); err == nil {
		t.Error("a table name that is not an identifier was taken")
	}
}

func TestPartitionsMadeByInstancesTogether(t *testing.T) {
	t.Parallel()
	db := openTestPostgres(t)
	ctx := context.Background()
	r := logTable(t, db)
	r.LockTimeout = 100 * time.Millisecond
	made := make(chan []string, 4)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			m, err := db.EnsurePartitions(ctx, r, day0.Add(-40*24*time.Hour), day0)
			made <- m
			errs <- err
		}()
	}
	total := 0
	for range 4 {
		total += len(<-made)
		if err := <-errs; err != nil {
			t.Errorf("an instance: %v (each waits for the one making them, not on its locks)", err)
		}
	}
	if ps, err := db.Partitions(ctx, r); err != nil || total != 40 || len(ps) != 40 {
		t.Errorf("made %d partitions in all, %d exist (%v); want the 40 days once", total, len(ps), err)
	}
}
