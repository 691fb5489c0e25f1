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

// checkEvents checks the events' settings: their networks here, their
// timings by the events' own check (events.Config.Check), defaults
// applied as the events apply them.
func (c Config) checkEvents(bad func(field, msg string), add func(error)) {
	if _, err := ParseNetworks(c.EventsAllowedNetworks); err != nil {
		bad("EventsAllowedNetworks", err.Error())
	}
	checkComponent(bad, add, events.Config{Timeout: c.EventsTimeout, Concurrency: c.EventsConcurrency, Retention: c.EventsRetention,
		Recovery: c.EventsRecovery, Remember: c.EventsRemember, FeedWindow: c.EventsFeedWindow}.Check(),
		map[string]string{"Timeout": "EventsTimeout", "Concurrency": "EventsConcurrency", "Retention": "EventsRetention",
			"Recovery": "EventsRecovery", "Remember": "EventsRemember", "FeedWindow": "EventsFeedWindow"})
}
