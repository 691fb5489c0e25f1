package admin

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/web"
)

// While the expensive reads' turns are taken, a what-if and a shape wait
// their turn, then are answered 503 admin_busy with Retry-After, before
// Redis is read; a turn given back is taken again.
func TestExpensiveReadsWaitTheirTurn(t *testing.T) {
	t.Parallel()
	s := New(Config{ExpensiveReads: 1, ExpensiveWait: time.Millisecond})
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
