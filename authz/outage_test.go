package authz

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// TestMiniredisGone stops the Redis server itself, not just its replies.
func TestMiniredisGone(t *testing.T) {
	t.Parallel()
	rdb, mr := testenv.Miniredis(t)
	testenv.QuietRedisLog(t, mr.Addr())
	c := newClock()
	k := newRing(t, rdb, "mr:", c, func(cfg *Config) {
		cfg.NoPubSub = false // the listener must not hang or spin when Redis goes
		cfg.Timeout = 100 * time.Millisecond
	})
	_, secret := mustCreate(t, k, companyA, invoicing.Live, "invoices:read")
	if _, err := k.Verify(ctx, secret); err != nil {
		t.Fatal(err)
	}
	mr.Close()
	c.Add(2 * time.Second)
	if _, err := k.Verify(ctx, secret); err != nil {
		t.Fatalf("recently verified key with Redis gone = %v", err)
	}
	unknown := "igw_live_" + strings.Repeat("z", secretBody)
	if _, err := k.Verify(ctx, unknown); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("unknown key with Redis gone = %v, want ErrUnavailable", err)
	}
	c.Add(5 * time.Minute) // default StaleTTL
	if _, err := k.Verify(ctx, secret); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("stale key with Redis gone = %v, want ErrUnavailable", err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRedisClosedPort: a Keyring whose Redis address answers nothing says
// "unavailable", never "invalid", and does not wait longer than its timeout.
func TestRedisClosedPort(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	testenv.QuietRedisLog(t, addr)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	k := newRing(t, rdb, "closed:", nil, func(cfg *Config) { cfg.NoPubSub = false })
	secret, _ := newSecret(invoicing.Live)
	if _, err := k.Verify(ctx, secret); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrInvalidKey) {
		t.Fatalf("Verify = %v, want ErrUnavailable", err)
	}
	if err := k.Ping(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Ping = %v", err)
	}
	if _, err := k.List(ctx, companyA); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("List = %v", err)
	}
	if _, _, err := k.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Test, Scopes: 1}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Create = %v", err)
	}
	if _, _, err := k.Revoke(ctx, "key_aaaaaaaaaaaaaaaaaaaa"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Revoke = %v", err)
	}
}
