package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// oldEntry is an entry as the earlier layout kept it in a company's Redis
// stream: its id and its fields.
type oldEntry struct {
	id     string
	fields []any
}

// writeOldStreams writes streams as the earlier version's append script
// did: XADD to prefix + "{company}" with the id of the recording
// millisecond, fields time, actor, action, then key, webhook, before and
// after when set.
func writeOldStreams(t *testing.T, rdb redis.UniversalClient, prefix string, streams map[string][]oldEntry) {
	t.Helper()
	for company, entries := range streams {
		pipe := rdb.Pipeline()
		for _, e := range entries {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: prefix + "{" + company + "}", ID: e.id, Values: e.fields})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// oldStreams are a previous version's streams at now: company A with a
// key's creation and revocation, a limit's change and one event older than
// the retention, and two entries in one millisecond; B with n entries
// (more than one chunk of the upgrade).
func oldStreams(now time.Time, n int) map[string][]oldEntry {
	ms := func(d time.Duration) string { return strconv.FormatInt(now.Add(-d).UnixMilli(), 10) }
	a := []oldEntry{
		{ms(401*24*time.Hour) + "-0", []any{"time", ms(401 * 24 * time.Hour), "actor", "old@ops", "action", ActionLimitsSet}},
		{ms(time.Hour) + "-0", []any{"time", ms(time.Hour), "actor", "ana@platform", "action", ActionKeyCreated,
			"key", "key_aaaaaaaaaaaaaaaaaaaa", "after", `{"hint":"igw_live_…x9Qa","state":"active"}`}},
		{ms(time.Hour) + "-1", []any{"time", ms(2 * time.Hour), "actor", "ana@platform", "action", ActionKeyRevoked,
			"key", "key_aaaaaaaaaaaaaaaaaaaa", "before", `{"state":"active"}`, "after", `{"state":"revoked"}`}},
		{ms(time.Minute) + "-0", []any{"time", ms(time.Minute), "actor", "rui@ops", "action", ActionWebhookCreated,
			"webhook", "ep_aaaaaaaaaaaaaaaaaaaaaaaaaa", "after", `{"url":"https://hooks.example.com/w"}`}},
	}
	var b []oldEntry
	for i := range n {
		id := ms(time.Duration(n-i)*time.Second) + "-0"
		b = append(b, oldEntry{id, []any{"time", ms(time.Duration(n-i) * time.Second), "actor", "bot@ops", "action", ActionLimitsSet,
			"after", fmt.Sprintf(`{"n":%d}`, i)}})
	}
	return map[string][]oldEntry{companyA: a, companyB: b}
}

func mustSeq(t *testing.T, id string) int64 {
	t.Helper()
	s, ok := seqOf(id)
	if !ok {
		t.Fatalf("%q is not an id of the log", id)
	}
	return s
}

// auditKeys are the keys left under prefix.
func auditKeys(t *testing.T, rdb *redis.Client, prefix string) []string {
	t.Helper()
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// testUpgrade: a Redis holding the previous version's streams is copied
// into the database, each entry with its id and fields, the one past the
// retention left out; nothing of the log is left in Redis; the log reads
// them in order and records after them; an upgrade again finds nothing.
func testUpgrade(t *testing.T, h *harness) {
	rdb, prefix := testenv.Redis(t)
	prefix += "audit:"
	now := h.clock.Now()
	writeOldStreams(t, rdb, prefix, oldStreams(now, 1200))
	l := h.log(Config{})
	u, err := l.UpgradeFromRedis(ctx, rdb, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if u != (Upgraded{Streams: 2, Copied: 3 + 1200, Expired: 1}) {
		t.Errorf("upgrade: %+v", u)
	}
	if keys := auditKeys(t, rdb, prefix); len(keys) != 0 {
		t.Errorf("audit keys left in Redis after the upgrade: %v", keys)
	}
	evs := readAll(t, l, companyA, time.Time{})
	hour := strconv.FormatInt(now.Add(-time.Hour).UnixMilli(), 10)
	if len(evs) != 3 || evs[0].ID != hour+"-0" || evs[1].ID != hour+"-1" || *evs[0].KeyID != "key_aaaaaaaaaaaaaaaaaaaa" ||
		string(evs[0].After) != `{"hint":"igw_live_…x9Qa","state":"active"}` || evs[0].Before != nil ||
		string(evs[1].Before) != `{"state":"active"}` || !evs[1].Time.Equal(time.UnixMilli(now.Add(-2*time.Hour).UnixMilli())) ||
		evs[2].WebhookID == nil || evs[2].KeyID != nil || evs[2].Actor != "rui@ops" {
		t.Errorf("company A after the upgrade: %+v", evs)
	}
	var all []Event
	for since := (time.Time{}); ; {
		page, next, err := l.Read(ctx, companyB, since, MaxRead)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if next.IsZero() {
			break
		}
		since = next
	}
	if len(all) != 1200 || string(all[0].After) != `{"n":0}` || string(all[1199].After) != `{"n":1199}` {
		t.Errorf("company B after the upgrade: %d entries", len(all))
	}
	// A new entry comes after those copied, even from a clock behind them.
	behind := h.log(Config{Now: func() time.Time { return now.Add(-time.Hour) }})
	ev := mustRecord(t, behind, entry(ActionLimitsReset, "", nil, nil))
	if s, _ := seqOf(ev.ID); s != mustSeq(t, evs[2].ID)+1 {
		t.Errorf("an entry after the upgrade has id %s, before the copied %s", ev.ID, evs[2].ID)
	}
	if again, err := l.UpgradeFromRedis(ctx, rdb, prefix); err != nil || again != (Upgraded{}) {
		t.Errorf("a second upgrade: %+v, %v", again, err)
	}
	// An entry the log could not have made is left where it is.
	writeOldStreams(t, rdb, prefix, map[string][]oldEntry{companyA: {
		{strconv.FormatInt(now.UnixMilli(), 10) + "-0", []any{"time", "1", "actor", "x@ops", "action", ActionLimitsSet, "colour", "red"}},
	}})
	if u, err := l.UpgradeFromRedis(ctx, rdb, prefix); err != nil || u != (Upgraded{Streams: 1, Kept: 1}) || len(auditKeys(t, rdb, prefix)) != 1 {
		t.Errorf("an upgrade of an entry the log refuses: %+v, %v, keys %v", u, err, auditKeys(t, rdb, prefix))
	}
}

// testUpgradeTogether: several instances upgrade the same Redis at once,
// one having copied part of it before: each entry is in the log once.
func testUpgradeTogether(t *testing.T, h *harness) {
	rdb, prefix := testenv.Redis(t)
	prefix += "audit:"
	streams := oldStreams(h.clock.Now(), 700)
	writeOldStreams(t, rdb, prefix, streams)
	// An earlier run copied B's first entries, then stopped before
	// deleting them from Redis.
	first := h.log(Config{})
	var rows []row
	for _, e := range streams[companyB][:300] {
		rec := EntryRecord{ID: e.id, Fields: map[string]string{}}
		for i := 0; i < len(e.fields); i += 2 {
			rec.Fields[e.fields[i].(string)] = e.fields[i+1].(string)
		}
		r, _ := rec.row(companyB)
		rows = append(rows, r)
	}
	if _, err := first.copyRows(ctx, companyB, rows, rows[len(rows)-1].seq); err != nil {
		t.Fatal(err)
	}
	const instances = 3
	results := make(chan Upgraded, instances)
	errs := make(chan error, instances)
	for range instances {
		l := h.log(Config{})
		go func() {
			u, err := l.UpgradeFromRedis(ctx, rdb, prefix)
			results <- u
			errs <- err
		}()
	}
	var total Upgraded
	for range instances {
		u := <-results
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		total.Copied += u.Copied
		total.Present += u.Present
	}
	if total.Copied != 3+400 {
		t.Errorf("the instances copied %d entries in all, want the 403 not copied before (and %d found present)", total.Copied, total.Present)
	}
	if n := h.count("audit_entries"); n != 3+700 {
		t.Errorf("%d entries in the database, want 703: each once", n)
	}
	if keys := auditKeys(t, rdb, prefix); len(keys) != 0 {
		t.Errorf("audit keys left in Redis: %v", keys)
	}
}

// TestUpgradeFromRedisCluster copies streams spread over a real three-master
// Redis Cluster: every master's are found and deleted.
func TestUpgradeFromRedisCluster(t *testing.T) {
	t.Parallel()
	rdb := testenv.RedisClusterClient(t)
	h := openSQLite(t)
	const prefix = "gw:audit:"
	streams := map[string][]oldEntry{}
	at := strconv.FormatInt(h.clock.Now().UnixMilli(), 10)
	for i := range 12 {
		co := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		streams[co] = []oldEntry{{at + "-0", []any{"time", at, "actor", "ana@ops", "action", ActionLimitsSet, "after", fmt.Sprintf(`{"n":%d}`, i)}}}
	}
	for co, es := range streams {
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: prefix + "{" + co + "}", ID: es[0].id, Values: es[0].fields}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	l := h.log(Config{})
	if u, err := l.UpgradeFromRedis(ctx, rdb, prefix); err != nil || u.Copied != 12 {
		t.Fatalf("upgrade on Cluster: %+v, %v", u, err)
	}
	for i := range 12 {
		evs := readAll(t, l, fmt.Sprintf("00000000-0000-4000-8000-%012d", i), time.Time{})
		if len(evs) != 1 || string(evs[0].After) != fmt.Sprintf(`{"n":%d}`, i) || evs[0].ID != at+"-0" {
			t.Errorf("company %d: %+v", i, evs)
		}
	}
	var left atomic.Int64 // masters are asked at once
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		keys, err := c.Keys(ctx, prefix+"*").Result()
		left.Add(int64(len(keys)))
		return err
	})
	if err != nil || left.Load() != 0 {
		t.Errorf("%d audit keys left on the masters (%v)", left.Load(), err)
	}
}

// TestUpgradeRedisDown: a Redis that does not answer fails the upgrade as
// unavailable, and the database is left as it was.
func TestUpgradeRedisDown(t *testing.T) {
	t.Parallel()
	h := openSQLite(t)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + testenv.ClosedPort(t), MaxRetries: -1})
	defer rdb.Close()
	if _, err := h.log(Config{}).UpgradeFromRedis(ctx, rdb, "audit:"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("upgrade without Redis: %v", err)
	}
	if n := h.count("audit_entries"); n != 0 {
		t.Errorf("%d entries written", n)
	}
}

// The migrations on both engines: pending on an empty database, applied
// once, then nothing pending.
func TestMigrations(t *testing.T) {
	t.Parallel()
	for name, url := range map[string]string{"postgres": testenv.Postgres(t), "sqlite": "sqlite:" + t.TempDir() + "/a.db"} {
		db, err := sqldb.Open(ctx, sqldb.Config{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if p, err := db.Check(ctx, Migrations()); err != nil || len(p) != 1 || p[0].Track != "audit" {
			t.Errorf("%s: pending on an empty database: %v, %v", name, p, err)
		}
		if _, err := db.Apply(ctx, Migrations()); err != nil {
			t.Fatal(err)
		}
		if p, err := db.Check(ctx, Migrations()); err != nil || len(p) != 0 {
			t.Errorf("%s: pending after Apply: %v, %v", name, p, err)
		}
	}
}
