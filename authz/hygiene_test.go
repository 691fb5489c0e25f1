package authz

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// TestNoSecretInLogsOrErrors drives every path that logs or fails (outage,
// recovery, corrupt record, revocation, bad input) and scans all of it.
func TestNoSecretInLogsOrErrors(t *testing.T) {
	t.Parallel()
	rdb, _ := testenv.Miniredis(t)
	p := attachProbe(t, rdb)
	var logs testenv.SyncBuffer
	c := newClock()
	k := newRing(t, rdb, "hyg:", c, func(cfg *Config) {
		cfg.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	var errs []string
	note := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	key, secret := mustCreate(t, k, companyA, invoicing.Live, "invoices:read")
	_, err := k.Verify(ctx, secret)
	note(err)

	p.down.Store(true)
	c.Add(2 * time.Second)
	_, err = k.Verify(ctx, secret)
	note(err)
	other, _ := newSecret(invoicing.Test)
	_, err = k.Verify(ctx, other)
	note(err)
	_, _, err = k.Revoke(ctx, key.ID)
	note(err)
	p.down.Store(false)
	c.Add(2 * time.Second)
	_, err = k.Verify(ctx, secret)
	note(err)

	// A record Verify cannot read: refused as invalid, reported in the log.
	corrupt, _ := newSecret(invoicing.Live)
	d := sha256.Sum256([]byte(corrupt))
	rdb.HSet(ctx, "hyg:key:"+hex.EncodeToString(d[:]), "id", "key_x", "mode", "PROD")
	if _, err := k.Verify(ctx, corrupt); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("corrupt record = %v, want ErrInvalidKey", err)
	} else {
		note(err)
	}
	_, _, err = k.Revoke(ctx, key.ID)
	note(err)
	for _, bad := range []string{secret + "x", secret[:len(secret)-1] + "*", strings.ToUpper(secret)} {
		_, err = k.Verify(ctx, bad)
		note(err)
	}
	// Unknown keys past the bound of lookups: refused, naming none.
	var flood []string
	for range 25 {
		s, _ := newSecret(invoicing.Live)
		flood = append(flood, s)
		_, err = k.Verify(ctx, s)
		note(err)
	}
	if !errors.Is(err, ErrKeyLookupsLimited) {
		t.Fatalf("the 25th unknown key: %v, want ErrKeyLookupsLimited", err)
	}
	k.Close()

	out := logs.String() + strings.Join(errs, "\n")
	if !strings.Contains(out, "unreadable key record") || !strings.Contains(out, "Redis unavailable") {
		t.Fatalf("expected log lines are missing; captured:\n%s", out)
	}
	for _, s := range append([]string{secret, other, corrupt}, flood...) {
		body := s[prefixLen:]
		for i := 0; i+8 <= len(body); i++ {
			if strings.Contains(out, body[i:i+8]) {
				t.Fatalf("logs or errors hold part of a secret:\n%s", out)
			}
		}
	}
}

// TestCloseEndsGoroutines: Close leaves none of the Keyring's goroutines
// running (the Redis client's own connections are the caller's).
// Not parallel: it counts every Keyring goroutine of the process.
func TestCloseEndsGoroutines(t *testing.T) {
	rdb, _ := testenv.Miniredis(t)
	var rings []*Keyring
	for i := 0; i < 5; i++ {
		k := New(Config{Redis: rdb, Prefix: "close:", Logger: quiet})
		<-k.v.pubsubReady
		rings = append(rings, k)
	}
	_, secret := mustCreate(t, rings[0], companyA, invoicing.Live, "invoices:read")
	for _, k := range rings {
		k.Verify(ctx, secret)
	}
	if n := keyringGoroutines(); n < 10 {
		t.Fatalf("%d Keyring goroutines before Close, expected at least 10", n)
	}
	for _, k := range rings {
		if err := k.Close(); err != nil {
			t.Fatal(err)
		}
		k.Close() // twice is fine
	}
	// A goroutine go-redis started for the subscription (its stack says
	// "created by ...verifier.listen") ends just after Close: wait for it,
	// rather than count at once.
	testenv.Eventually(t, "the Keyring goroutines to end after Close", func() error {
		return testenv.Want(keyringGoroutines(), 0, "Keyring goroutines")
	})
}

func keyringGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "authz.(*Keyring)") || strings.Contains(g, "authz.(*verifier)") { // its verifier's loops

			n++
		}
	}
	return n
}
