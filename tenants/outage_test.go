package tenants

import (
	"context"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// Redis killed under load: no decision fails, every one is local at the
// company's last known limit, and admission stays bounded by the local bucket.
// Redis restarted on the same port: the instance returns to it by itself.
func TestRedisKilledAndRestartedUnderLoad(t *testing.T) {
	srv := testenv.StartRedisServer(t, 0)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	retry := 200 * time.Millisecond
	logs := &logRecorder{}
	l := New(Config{Redis: rdb, RetryEvery: retry, RedisTimeout: 50 * time.Millisecond, Logger: slogOf(logs)})
	custom := Limit{Rate: 100, Burst: 10}
	ctx := context.Background()
	if err := l.SetLimit(ctx, "acme", invoicing.Live, custom); err != nil {
		t.Fatal(err)
	}

	// Local decisions take a microsecond; the pause keeps the record of them
	// small while still far above the limit.
	pause := 100 * time.Microsecond

	// Phase 1: Redis up.
	evs := hammer([]*Limiter{l}, 4, pause, "acme", invoicing.Live, time.Now().Add(300*time.Millisecond))
	for _, e := range evs {
		if e.err != nil || e.d.Local || e.d.Limit != custom {
			t.Fatalf("with Redis up: %+v, %v", e.d, e.err)
		}
	}

	// Phase 2: Redis killed.
	srv.Kill()
	killed := time.Now()
	down := 1500 * time.Millisecond
	evs = hammer([]*Limiter{l}, 4, pause, "acme", invoicing.Live, killed.Add(down))
	local := 0
	for _, e := range evs {
		if e.err != nil {
			t.Fatalf("a decision failed with Redis down: %v", e.err)
		}
		if e.d.Local {
			local++
			if e.d.Limit != custom {
				t.Fatalf("local decision at %+v, want the last known %+v", e.d.Limit, custom)
			}
		}
	}
	if !l.Fallback() {
		t.Error("Fallback() = false with Redis down")
	}
	if local < len(evs)-8 { // only requests already on their way may have been decided by Redis
		t.Errorf("only %d of %d decisions local with Redis down", local, len(evs))
	}
	got := admitted(t, evs, killed, killed.Add(down))
	lo, hi := 0.9*custom.Rate*down.Seconds(), 1.05*(custom.Rate*down.Seconds()+float64(custom.Burst))
	t.Logf("Redis down %v: %d decisions, %d local, %d admitted, want within [%.0f, %.0f]", down, len(evs), local, got, lo, hi)
	if float64(got) < lo || float64(got) > hi {
		t.Errorf("admitted %d with Redis down for %v, want within [%.0f, %.0f]: neither refuse all nor admit unbounded", got, down, lo, hi)
	}

	// Phase 3: Redis back on the same port (empty: the override is gone).
	testenv.StartRedisServer(t, srv.Port)
	back := time.Now()
	evs = hammer([]*Limiter{l}, 4, pause, "acme", invoicing.Live, back.Add(retry+1500*time.Millisecond))
	var returned time.Time
	for _, e := range evs {
		if e.err != nil {
			t.Fatalf("a decision failed while Redis came back: %v", e.err)
		}
		if !e.d.Local && e.start.After(back) && (returned.IsZero() || e.end.Before(returned)) {
			returned = e.end
		}
	}
	if returned.IsZero() {
		t.Fatal("never returned to Redis")
	}
	t.Logf("returned to Redis %v after it was back (RetryEvery %v)", returned.Sub(back), retry)
	if l.Fallback() {
		t.Error("Fallback() = true with Redis back")
	}
	if d := firstDecision(t, l, "acme", invoicing.Live); d.Local || d.Limit != liveDef {
		t.Errorf("after the restart: %+v, want decided by the new Redis at the default", d)
	}
	// go-redis itself backs off dialling (once per second) after PoolSize
	// failed dials, hence the allowance beyond RetryEvery.
	if took := returned.Sub(back); took > retry+time.Second {
		t.Errorf("took %v to return to Redis, want within RetryEvery (%v) + go-redis's dial backoff", took, retry)
	}
	warns, infos := 0, 0
	for _, m := range logs.messages() {
		switch m {
		case "WARN tenants: Redis unreachable; deciding rate limits locally per instance":
			warns++
		case "INFO tenants: Redis reachable again; rate limits are global again":
			infos++
		}
	}
	if warns != 1 || infos != 1 {
		t.Errorf("logged %d entries into and %d out of fallback, want 1 each: %q", warns, infos, logs.messages())
	}
}
