package events

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// The delivery side's endpoint cache keeps an endpoint a second by the
// service's clock, not the wall's: a change that moves no version (an
// endpoint disabled after days of failures) is seen once the clock has
// moved a second, and not before; a change that moves the version is seen
// at once.
func TestEndpointCacheFollowsTheClock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg, clock := e.clocked()
	s := e.service(cfg)
	ep, _ := e.endpoint(s)
	ctx := context.Background()
	cache := newEndpointCache(s.Webhooks)
	claims := []claim{{endpoint: ep.ID, event: "evt_aaaaaaaaaaaaaaaaaaaaaaaaaa"}}
	get := func() *Webhook {
		t.Helper()
		ver := e.rdb.Get(ctx, s.l.version()).Val()
		got := cache.get(ctx, claims, ver)[ep.ID]
		if got == nil {
			t.Fatal("the endpoint was not read")
		}
		return got
	}
	if !get().Enabled {
		t.Fatal("a new endpoint reads disabled")
	}
	if err := e.rdb.HSet(ctx, s.l.endpoint(ep.ID), "enabled", "0").Err(); err != nil {
		t.Fatal(err)
	}
	clock.Add(999 * time.Millisecond)
	if !get().Enabled {
		t.Error("read again before a second had passed on the service's clock")
	}
	clock.Add(time.Millisecond)
	if get().Enabled {
		t.Error("still the cached endpoint a second later on the service's clock")
	}
	desc := "changed"
	if _, err := s.UpdateWebhook(ctx, ep.ID, Patch{Description: &desc}); err != nil {
		t.Fatal(err)
	}
	if got := get(); got.Description != desc {
		t.Errorf("a change that moved the version: cached %q", got.Description)
	}
}

// Detection's failures are logged at most once a minute by the service's
// clock: a Redis out of reach for an hour of that clock logs once a minute
// of it, however fast the steps fail.
func TestDetectionFailuresLoggedByTheClock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg, clock := e.clocked()
	var logged testenv.SyncBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	s := e.service(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	steps := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.det.every(ctx, time.Millisecond, "TEST", "changes", func(c context.Context) error {
			select {
			case steps <- struct{}{}:
			case <-c.Done():
			}
			return errors.New("Redis out of reach")
		})
	}()
	defer func() { cancel(); <-done }()
	step := func() {
		t.Helper()
		select {
		case <-steps:
		case <-time.After(60 * time.Second):
			t.Fatal("no step")
		}
	}
	for range 5 { // five failures at one instant of the clock: one log
		step()
	}
	clock.Add(time.Minute + time.Millisecond)
	for range 5 {
		step()
	}
	step() // the fifth's log is written before the next step starts
	if n := strings.Count(logged.String(), "detection failed"); n != 2 {
		t.Errorf("logged %d times over a minute of the clock, want 2", n)
	}
}
