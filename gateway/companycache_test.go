package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
)

// companyStore answers Company with status and err, counting the calls.
type companyStore struct {
	Store
	status string
	err    error
	calls  int
}

func (c *companyStore) Company(_ context.Context, id string) (invoicing.Company, error) {
	c.calls++
	return invoicing.Company{ID: id, Status: c.status}, c.err
}

// The cache asks the database once per TTL per company and mode, keeps the
// last status through a database outage, and starts over when full.
func TestCompanyCache(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	c := newCompanyCache(5*time.Second, func() time.Time { return now })
	st := &companyStore{status: "active"}
	ctx := context.Background()
	get := func(mode invoicing.Mode, id string) (string, error) { return c.status(ctx, mode, id, st) }
	step := func(want string, wantCalls int, mode invoicing.Mode, id string) {
		t.Helper()
		got, err := get(mode, id)
		if err != nil || got != want || st.calls != wantCalls {
			t.Fatalf("status %q, %v after %d calls; want %q after %d", got, err, st.calls, want, wantCalls)
		}
	}
	step("active", 1, invoicing.Live, "a")
	step("active", 1, invoicing.Live, "a") // cached
	step("active", 2, invoicing.Test, "a") // the other mode is another entry
	st.status = "suspended"
	now = now.Add(4 * time.Second)
	step("active", 2, invoicing.Live, "a") // within the TTL: the suspension is not seen yet
	now = now.Add(2 * time.Second)
	step("suspended", 3, invoicing.Live, "a")
	st.err = backend.ErrUnavailable
	now = now.Add(6 * time.Second)
	step("suspended", 4, invoicing.Live, "a") // the database is down: the last status
	if _, err := get(invoicing.Live, "b"); !errors.Is(err, backend.ErrUnavailable) {
		t.Fatalf("unknown company with the database down: %v", err)
	}
	st.err = nil
	for i := range maxCompanies {
		if _, err := c.status(ctx, invoicing.Live, string(rune('c'+i%1000))+time.Duration(i).String(), st); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.n.Load(); n > maxCompanies || n < 1 {
		t.Fatalf("%d entries after %d more companies, want at most %d", n, maxCompanies, maxCompanies)
	}
	calls := st.calls
	step("suspended", calls+1, invoicing.Live, "a") // forgotten when the cache started over
}
