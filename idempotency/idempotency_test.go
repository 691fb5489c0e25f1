package idempotency

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

const coA, coB = "0b7e3c6a-5f1d-4c1e-9a51-2d3f4e5a6b7c", "7d1f0e2a-9c3b-4d5e-8f60-718293a4b5c6"

// TestStore runs the same rules on the real Redis and on miniredis.
func TestStore(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		ctx := context.Background()
		s := New(Config{Redis: rdb, Prefix: prefix + "idem:", TTL: time.Hour, LockTTL: time.Minute})
		sc := Scope{Company: coA, Mode: invoicing.Live, Key: "order-{42}:retry"}
		fp := Fingerprint([]byte("POST"), []byte("/clients"), []byte(`{"name":"Ana"}`))

		begin := func(sc Scope, fp string) Outcome {
			t.Helper()
			o, err := s.Begin(ctx, sc, fp)
			if err != nil {
				t.Fatal(err)
			}
			return o
		}
		first := begin(sc, fp)
		if first.State != Started || first.Token == "" {
			t.Fatalf("first attempt: %+v, want Started with a token", first)
		}
		if o := begin(sc, fp); o.State != Running {
			t.Fatalf("while running: %+v, want Running", o)
		}
		if o := begin(sc, Fingerprint([]byte("other"))); o.State != Reused {
			t.Fatalf("another request while running: %+v, want Reused", o)
		}
		// The same key in another company or mode is another key.
		for _, other := range []Scope{{coB, invoicing.Live, sc.Key}, {coA, invoicing.Test, sc.Key}} {
			if o := begin(other, fp); o.State != Started {
				t.Fatalf("%+v: %+v, want Started", other, o)
			}
		}

		// Abandon frees the key only for the claim's holder.
		if err := s.Abandon(ctx, sc, "not-the-token"); err != nil {
			t.Fatal(err)
		}
		if o := begin(sc, fp); o.State != Running {
			t.Fatalf("after a stranger's abandon: %+v, want Running", o)
		}
		if err := s.Abandon(ctx, sc, first.Token); err != nil {
			t.Fatal(err)
		}
		second := begin(sc, fp)
		if second.State != Started {
			t.Fatalf("after abandon: %+v, want Started", second)
		}

		body := []byte("{\"id\":\"x\",\"name\":\"Ana \\u0026 Filhos\"}\n\x00\xff")
		want := Answer{Status: 201, ContentType: "application/json", Body: body, Location: "/api/v1/v1/clients/x"}
		if err := s.Finish(ctx, sc, fp, want); err != nil {
			t.Fatal(err)
		}
		done := begin(sc, fp)
		if done.State != Done || done.Answer.Status != 201 || !bytes.Equal(done.Answer.Body, body) ||
			done.Answer.ContentType != want.ContentType || done.Answer.Location != want.Location {
			t.Fatalf("after finish: %+v, want the stored answer byte for byte", done)
		}
		if o := begin(sc, Fingerprint([]byte("other"))); o.State != Reused {
			t.Fatalf("another request after finish: %+v, want Reused", o)
		}
		// The first final answer stays.
		if err := s.Finish(ctx, sc, fp, Answer{Status: 409, Body: []byte("later")}); err != nil {
			t.Fatal(err)
		}
		if o := begin(sc, fp); o.Answer.Status != 201 {
			t.Fatalf("a second finish replaced the first: %+v", o)
		}
		ttl, err := rdb.PTTL(ctx, s.key(sc)).Result()
		if err != nil || ttl <= 59*time.Minute || ttl > time.Hour {
			t.Errorf("record TTL %v, %v; want about the configured hour", ttl, err)
		}
	})
}

// TestOneClaim: of many concurrent first attempts, exactly one runs.
func TestOneClaim(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		s := New(Config{Redis: rdb, Prefix: prefix + "idem:"})
		sc := Scope{Company: coA, Mode: invoicing.Test, Key: "k"}
		var mu sync.Mutex
		states := map[State]int{}
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o, err := s.Begin(context.Background(), sc, "fp")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				states[o.State]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if states[Started] != 1 || states[Running] != 19 {
			t.Fatalf("states %v, want 1 Started and 19 Running", states)
		}
	})
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	s := New(Config{Redis: rdb})
	if _, err := s.Begin(context.Background(), Scope{Company: coA, Mode: invoicing.Live, Key: "k"}, "fp"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Begin on a dead Redis: %v, want ErrUnavailable", err)
	}
}

func TestResourceID(t *testing.T) {
	t.Parallel()
	sc := Scope{Company: coA, Mode: invoicing.Live, Key: "k1"}
	id := ResourceID(sc, "client")
	if c, ok := invoicing.CanonicalUUID(id); !ok || c != id || id[14] != '8' {
		t.Fatalf("ResourceID = %q, want a canonical version-8 UUID", id)
	}
	if ResourceID(sc, "client") != id {
		t.Fatal("ResourceID is not stable")
	}
	for _, other := range []Scope{{coB, invoicing.Live, "k1"}, {coA, invoicing.Test, "k1"}, {coA, invoicing.Live, "k2"}} {
		if ResourceID(other, "client") == id {
			t.Errorf("%+v has the same id as %+v", other, sc)
		}
	}
	if Fingerprint([]byte("ab"), []byte("c")) == Fingerprint([]byte("a"), []byte("bc")) {
		t.Error("Fingerprint confuses part boundaries")
	}
}
