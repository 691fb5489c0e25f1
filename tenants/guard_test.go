package tenants

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

func TestGuardPerCompanyCap(t *testing.T) {
	t.Parallel()
	g := NewGuard(GuardConfig{PerCompany: 2, Total: 10})
	ctx := context.Background()
	r1, err1 := g.Acquire(ctx, "acme")
	r2, err2 := g.Acquire(ctx, "acme")
	if err1 != nil || err2 != nil {
		t.Fatalf("first two: %v, %v", err1, err2)
	}
	if _, err := g.Acquire(ctx, "acme"); !errors.Is(err, ErrBusy) {
		t.Fatalf("third of acme: %v, want ErrBusy at once", err)
	}
	r3, err := g.Acquire(ctx, "other")
	if err != nil {
		t.Fatalf("another company while acme is at its cap: %v", err)
	}
	r1.Release()
	r1.Release() // a second release gives nothing back twice
	if c, total := g.InFlight("acme"); c != 1 || total != 2 {
		t.Errorf("in flight after one release: acme %d, total %d; want 1, 2", c, total)
	}
	r4, err := g.Acquire(ctx, "acme")
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	if _, err := g.Acquire(ctx, "acme"); !errors.Is(err, ErrBusy) {
		t.Fatalf("acme at its cap again: %v, want ErrBusy", err)
	}
	r2.Release()
	r3.Release()
	r4.Release()
	if c, total := g.InFlight("acme"); c != 0 || total != 0 {
		t.Errorf("all released: acme %d, total %d", c, total)
	}
	if len(g.inflight) != 0 {
		t.Errorf("%d companies remembered with nothing in flight", len(g.inflight))
	}
}

func TestGuardTotalCapWaits(t *testing.T) {
	t.Parallel()
	g := NewGuard(GuardConfig{PerCompany: 5, Total: 2})
	ctx := context.Background()
	ra, _ := g.Acquire(ctx, "a")
	rb, _ := g.Acquire(ctx, "b")
	var released atomic.Bool
	got := make(chan error, 1)
	go func() {
		release, err := g.Acquire(ctx, "c")
		if err == nil {
			defer release.Release()
			if !released.Load() {
				err = errors.New("a slot beyond Total 2 taken before any was released")
			}
		}
		got <- err
	}()
	// Once c counts as in flight, its Acquire is past the per-company
	// check: it can only wait for a slot, which none gives back yet.
	testenv.Eventually(t, "the third acquire to wait", func() error {
		c, _ := g.InFlight("c")
		return testenv.Want(c, 1, "c in flight")
	})
	select {
	case err := <-got:
		t.Fatalf("third acquire with Total 2 returned %v without waiting", err)
	default:
	}
	released.Store(true)
	ra.Release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("after a release: %v", err)
		}
	case <-time.After(testenv.Patience):
		t.Fatal("a released slot was not handed to the waiter")
	}
	rb.Release()
}

func TestGuardWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	g := NewGuard(GuardConfig{PerCompany: 1, Total: 1})
	release, err := g.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := g.Acquire(ctx, "b"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting past the deadline: %v, want DeadlineExceeded", err)
	}
	// The company that gave up holds nothing.
	if c, _ := g.InFlight("b"); c != 0 {
		t.Errorf("b still counts %d in flight after giving up", c)
	}
	release.Release()
	r, err := g.Acquire(context.Background(), "b")
	if err != nil {
		t.Fatalf("after the holder released: %v", err)
	}
	r.Release()
}

func TestGuardDefaults(t *testing.T) {
	t.Parallel()
	g := NewGuard(GuardConfig{})
	if g.per != 8 || cap(g.slots) != 64 {
		t.Errorf("defaults: per company %d, total %d; want 8, 64", g.per, cap(g.slots))
	}
}

// Validate refuses what NewGuard would take as the default (a negative
// cap) or could never honour (a company's cap above the total, defaults
// applied), naming the field; zero values are the defaults.
func TestGuardConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg   GuardConfig
		field string // "": valid
	}{
		{GuardConfig{}, ""},
		{GuardConfig{PerCompany: 64}, ""},
		{GuardConfig{PerCompany: 65}, "PerCompany"}, // above the default total
		{GuardConfig{PerCompany: 9, Total: 8}, "PerCompany"},
		{GuardConfig{Total: 4}, "Total"}, // below the default 8
		{GuardConfig{PerCompany: -1}, "PerCompany"},
		{GuardConfig{PerCompany: 1, Total: -1}, "Total"},
	} {
		err := tc.cfg.Validate()
		var fe *invoicing.SettingError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%+v: %v, want valid", tc.cfg, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%+v: %v, want an error naming %s", tc.cfg, err, tc.field)
		}
	}
}
