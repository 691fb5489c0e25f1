package config

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/invoicing-ao/gateway/events"
)

// ParseNetworks reads a comma-separated list of CIDRs or addresses
// (eventsAllowedNetworks).
func ParseNetworks(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR (10.0.0.0/8) or an address", f)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// checkEvents checks the events' settings.
func (c Config) checkEvents(bad func(field, msg string)) {
	if _, err := ParseNetworks(c.EventsAllowedNetworks); err != nil {
		bad("EventsAllowedNetworks", err.Error())
	}
	if c.EventsTimeout <= 0 || c.EventsTimeout > events.MaxTimeout {
		bad("EventsTimeout", fmt.Sprintf("must be positive and at most %s", events.MaxTimeout))
	}
	if c.EventsConcurrency < 1 {
		bad("EventsConcurrency", "must be at least 1")
	}
	var schedule float64
	for _, d := range events.DefaultSchedule {
		schedule += d.Hours()
	}
	if c.EventsRetention.Hours() < schedule {
		bad("EventsRetention", fmt.Sprintf("must be at least the retry schedule's %.0fh", schedule))
	}
	if c.EventsRecovery <= 0 {
		bad("EventsRecovery", "must be positive")
	}
	// An id forgotten while its event is kept, or while detection may read
	// its change again after a loss of state, could be sent twice.
	if c.EventsRemember < c.EventsRetention || c.EventsRemember < 2*c.EventsRecovery {
		bad("EventsRemember", fmt.Sprintf("must be at least eventsRetention (%s) and twice eventsRecovery (%s)", c.EventsRetention, c.EventsRecovery))
	}
	if c.EventsFeedWindow > 0 && c.EventsFeedWindow < c.EventsRetention {
		bad("EventsFeedWindow", fmt.Sprintf("must be at least eventsRetention (%s), 0 for the same, or negative for no feed", c.EventsRetention))
	}
}
