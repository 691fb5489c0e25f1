package admin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/web"
)

// While the expensive reads' turns are taken, a what-if and a shape wait
// their turn, then are answered 503 admin_busy with Retry-After, before
// Redis is read; a turn given back is taken again.
func TestExpensiveReadsWaitTheirTurn(t *testing.T) {
	t.Parallel()
	s := New(Config{ExpensiveReads: 1, ExpensiveWait: time.Millisecond}).Limits
	release, err := s.expensive.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-time.Hour)
	_, errW := s.WhatIf(context.Background(), WhatIfQuery{CompanyID: "0a5e7c1e-0000-4000-8000-00000000000a", Mode: "LIVE", Rate: 5, Burst: 10, Since: since})
	_, errS := s.TrafficShape(context.Background(), "0a5e7c1e-0000-4000-8000-00000000000a", "LIVE", since)
	for _, err := range []error{errW, errS} {
		var we *web.Error
		if !errors.As(err, &we) || we.Code != "admin_busy" || we.RetryAfter != busyRetry {
			t.Errorf("with the turn taken: %v, want admin_busy with Retry-After", err)
		}
	}
	release()
	// Given back as long after as it was held: taken again then.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.expensive.wait = time.Minute
	again, err := s.expensive.acquire(ctx)
	if err != nil {
		t.Fatalf("the turn given back: %v", err)
	}
	again()
}

// "The last 30 days" (30d, 720h) is within them on a clock that moves
// between two reads, as the real one does: the query reads it once.
func TestThirtyDaysOnAMovingClock(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	ticks := 0
	s := New(Config{Now: func() time.Time { // a millisecond later at each read
		mu.Lock()
		defer mu.Unlock()
		ticks++
		return t0.Add(time.Duration(ticks) * time.Millisecond)
	}}).Limits
	p := web.Params{{Key: "id", Value: "0a5e7c1e-0000-4000-8000-00000000000a"}}
	for _, since := range []string{"30d", "720h"} {
		for path, h := range map[string]func(*http.Request, web.Params) (web.Answer, error){
			"whatif?mode=LIVE&rate=5&burst=10&since=" + since: s.adminWhatIf,
			"shape?mode=LIVE&since=" + since:                  s.adminShape,
		} {
			_, err := h(httptest.NewRequest(http.MethodGet, "/admin/v1/companies/x/limits/"+path, nil), p)
			// No shape store: past the checks, the read is unavailable.
			if we := (*web.Error)(nil); !errors.As(err, &we) || we.Code != "usage_unavailable" {
				t.Errorf("%s: %v, want past the checks", path, err)
			}
		}
	}
}
