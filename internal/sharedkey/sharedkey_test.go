package sharedkey

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// waitChecked waits until k's background comparison with Redis has run
// (its keys read again after at), with a generous deadline.
func waitChecked(t *testing.T, k *Key, at time.Time) [][]byte {
	t.Helper()
	var keys [][]byte
	testenv.Eventually(t, "the key compared with Redis's", func() error {
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.checked.Before(at) || k.refreshing.Load() {
			return errors.New("not yet")
		}
		keys = k.keys
		return nil
	})
	return keys
}

// Instances made at once end with one key, the one Redis keeps; after
// Redis loses it, the first instance to compare puts it back, and one that
// made another meanwhile adopts Redis's and still takes its own.
func TestSharedAcrossInstances(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	clock := testenv.NewClock(time.Now())
	name := prefix + "cursorkey"
	var ks [8]*Key
	got := make([][][]byte, len(ks))
	var wg sync.WaitGroup
	for i := range ks {
		ks[i] = New(Config{Redis: rdb, Name: name, Now: clock.Now})
		wg.Go(func() {
			var err error
			if got[i], err = ks[i].Keys(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	first := got[0][0]
	for i, k := range got {
		if len(k) != 1 || !bytes.Equal(k[0], first) || len(k[0]) != Size {
			t.Fatalf("instance %d has %x, instance 0 %x", i, k, first)
		}
	}

	// Redis loses it; a new instance makes another before any compares.
	rdb.Del(ctx, name)
	late := New(Config{Redis: rdb, Name: name, Now: clock.Now})
	other, err := late.Keys(ctx)
	if err != nil || bytes.Equal(other[0], first) {
		t.Fatalf("the late instance: %x, %v", other, err)
	}
	clock.Add(time.Minute)
	at := clock.Now()
	if _, err := ks[0].Keys(ctx); err != nil { // starts the comparison
		t.Fatal(err)
	}
	keys := waitChecked(t, ks[0], at)
	if len(keys) != 2 || !bytes.Equal(keys[0], other[0]) || !bytes.Equal(keys[1], first) {
		t.Fatalf("after Redis's changed: %x, want Redis's %x then its own %x", keys, other[0], first)
	}

	// Lost again, with nobody making another: put back as it was.
	rdb.Del(ctx, name)
	clock.Add(time.Minute)
	at = clock.Now()
	_, _ = late.Keys(ctx)
	waitChecked(t, late, at)
	if v := rdb.Get(ctx, name).Val(); v == "" {
		t.Fatal("the key was not put back")
	}
	if fresh, _ := New(Config{Redis: rdb, Name: name}).Keys(ctx); !bytes.Equal(fresh[0], other[0]) {
		t.Fatalf("a new instance reads %x, want the key put back %x", fresh[0], other[0])
	}
}

// With Redis down before the key was ever read, Keys fails (and asks Redis
// again only after Retry); once Redis answers, it has the key.
func TestRedisDownFirst(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + testenv.ClosedPort(t), MaxRetries: -1})
	defer down.Close()
	clock := testenv.NewClock(time.Now())
	k := New(Config{Redis: down, Name: prefix + "k", Now: clock.Now})
	if _, err := k.Keys(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Redis down: %v", err)
	}
	k.cfg.Redis = rdb // Redis is back
	if _, err := k.Keys(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("within Retry: %v, want the same error without asking", err)
	}
	clock.Add(time.Second)
	if keys, err := k.Keys(context.Background()); err != nil || len(keys) != 1 {
		t.Fatalf("Redis back: %x, %v", keys, err)
	}
}
