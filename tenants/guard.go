package tenants

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/invoicing-ao/gateway/invoicing"
)

// GuardConfig configures a Guard.
type GuardConfig struct {
	PerCompany int // requests of one company in flight (or waiting) at once; zero means DefaultPerCompany
	Total      int // requests in flight at once on this instance; zero means DefaultTotal
}

// GuardConfig's defaults.
const (
	DefaultPerCompany = 8
	DefaultTotal      = 64
)

// Validate refuses a negative cap, and a company's cap above the total
// (defaults applied: the field set is named), each as an
// *invoicing.SettingError naming the field:
// NewGuard would take the one as the default and never reach the other.
// A configuration is checked with it when it is loaded.
func (cfg GuardConfig) Validate() error {
	var errs []error
	if cfg.PerCompany < 0 {
		errs = append(errs, invoicing.InvalidSetting("tenants", "PerCompany", "must not be negative (zero means %d)", DefaultPerCompany))
	}
	if cfg.Total < 0 {
		errs = append(errs, invoicing.InvalidSetting("tenants", "Total", "must not be negative (zero means %d)", DefaultTotal))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	per, total := orInt(cfg.PerCompany, DefaultPerCompany), orInt(cfg.Total, DefaultTotal)
	switch {
	case per <= total:
	case cfg.PerCompany == 0: // the total set below the default per company
		return invoicing.InvalidSetting("tenants", "Total", "must be at least the per-company cap (%d)", per)
	default:
		return invoicing.InvalidSetting("tenants", "PerCompany", "must not be above the total cap (%d)", total)
	}
	return nil
}

func orInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// Guard caps the requests in flight to the database on this instance, per
// company and in total, so one company's slow queries cannot take every
// connection from the others. A company's excess fails fast with ErrBusy
// instead of queueing: its queue would only hold the slots it already has.
type Guard struct {
	per   int
	slots chan struct{} // a token per request in flight, up to Total

	mu       sync.Mutex
	inflight map[string]int // entries removed at zero: bounded by Total+waiters
}

// NewGuard returns a Guard.
func NewGuard(cfg GuardConfig) *Guard {
	return &Guard{per: orInt(cfg.PerCompany, DefaultPerCompany), slots: make(chan struct{}, orInt(cfg.Total, DefaultTotal)), inflight: make(map[string]int)}
}

// Acquire takes a slot for one request of the company. It fails at once with
// ErrBusy when the company already holds (or waits for) PerCompany slots, and
// otherwise waits, bounded by ctx, for one of the Total slots. The returned
// Slot must be released once the request is done with the database.
func (g *Guard) Acquire(ctx context.Context, companyID string) (Slot, error) {
	g.mu.Lock()
	if g.inflight[companyID] >= g.per {
		g.mu.Unlock()
		return Slot{}, ErrBusy
	}
	g.inflight[companyID]++
	g.mu.Unlock()

	select {
	case g.slots <- struct{}{}:
	default:
		select {
		case g.slots <- struct{}{}:
		case <-ctx.Done():
			g.leave(companyID)
			return Slot{}, fmt.Errorf("tenants: wait for a database slot: %w", context.Cause(ctx))
		}
	}
	return Slot{g: g, company: companyID}, nil
}

// Slot is one request's hold on a Guard. A value, not a release closure:
// one request would otherwise allocate the closure and its once-flag.
type Slot struct {
	g       *Guard
	company string
}

// Release gives the slot back. Releasing the same Slot variable again, or
// the zero Slot, does nothing (a copy of a Slot is not the same variable).
func (s *Slot) Release() {
	if s.g == nil {
		return
	}
	g := s.g
	s.g = nil
	<-g.slots
	g.leave(s.company)
}

func (g *Guard) leave(companyID string) {
	g.mu.Lock()
	if n := g.inflight[companyID] - 1; n > 0 {
		g.inflight[companyID] = n
	} else {
		delete(g.inflight, companyID)
	}
	g.mu.Unlock()
}

// InFlight reports the slots held or awaited by the company and the slots held
// in total, for metrics.
func (g *Guard) InFlight(companyID string) (company, total int) {
	g.mu.Lock()
	company = g.inflight[companyID]
	g.mu.Unlock()
	return company, len(g.slots)
}
