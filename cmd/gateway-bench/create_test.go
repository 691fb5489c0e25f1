package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// A change sent before the run is interrupted is seen to its answer, so
// that the run knows what to undo; none is sent after.
func TestCreateOutlivesInterruption(t *testing.T) {
	t.Parallel()
	arrived, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 { // a second call is counted and failed below
			close(arrived)
		}
		<-release // answers only after the run's context is cancelled
		fmt.Fprint(w, `{"id":"ep_1","secret":"whsec_x"}`)
	}))
	defer srv.Close()
	b := &bencher{o: benchOptions{adminURL: srv.URL, adminToken: "t"}, http: srv.Client()}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
		close(release)
	}()
	var v struct{ ID, Secret string }
	if err := b.create(ctx, http.MethodPost, "/admin/v1/companies/c/webhooks", `{}`, &v); err != nil || v.ID != "ep_1" {
		t.Fatalf("interrupted after sending: %v %+v; want the answer, to undo it later", err, v)
	}
	if err := b.create(ctx, http.MethodPost, "/admin/v1/keys", `{}`, &v); !errors.Is(err, context.Canceled) {
		t.Errorf("after the interruption: %v, want context.Canceled", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d calls reached the admin API, want 1", n)
	}
}
