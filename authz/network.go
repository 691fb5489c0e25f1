package authz

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/invoicing-ao/gateway/invoicing"
)

// ErrInvalidCIDR: a network that is not an IPv4 or IPv6 address or CIDR, or
// more than MaxCIDRs of them.
var ErrInvalidCIDR = invoicing.Define(invoicing.Error{Kind: invoicing.Invalid, Code: "invalid_body", Title: "Invalid request body", Message: "authz: invalid network"})

// MaxCIDRs bounds a key's networks: an allowlist is a few offices and
// servers, and every request with the key is checked against all of it.
const MaxCIDRs = 20

// ParsePrefix reads one network: a CIDR ("203.0.113.0/24", "2001:db8::/32")
// or a bare address, which means that address alone. The result is
// canonical: host bits cleared ("10.1.2.3/8" is 10.0.0.0/8), and an
// IPv4-mapped IPv6 network is written as the IPv4 network it is, so that
// IPv4 clients match it whatever form their address arrives in.
func ParsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return netip.Prefix{}, fmt.Errorf("%w: %q is not a CIDR such as 203.0.113.0/24 or 2001:db8::/32", ErrInvalidCIDR, invoicing.Clip(s))
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%w: %q is not an IP address or CIDR", ErrInvalidCIDR, invoicing.Clip(s))
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if a := p.Addr(); a.Is4In6() {
		if p.Bits() < 96 {
			return netip.Prefix{}, fmt.Errorf("%w: %q mixes IPv4-mapped and other IPv6 addresses", ErrInvalidCIDR, invoicing.Clip(s))
		}
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// ParseCIDRs reads a key's networks: each as ParsePrefix reads it, at most
// MaxCIDRs, returned sorted without duplicates. An empty list means any
// network.
func ParseCIDRs(list []string) ([]netip.Prefix, error) {
	if len(list) > MaxCIDRs {
		return nil, invoicing.InvalidField(ErrInvalidCIDR, "allowedCidrs", "must be at most %d networks (%d given)", MaxCIDRs, len(list))
	}
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		p, err := ParsePrefix(s)
		if err != nil {
			return nil, invoicing.InvalidField(ErrInvalidCIDR, "allowedCidrs", "must be CIDRs or addresses: %s", strings.TrimPrefix(err.Error(), ErrInvalidCIDR.Error()+": "))
		}
		out = append(out, p)
	}
	return canonicalCIDRs(out), nil
}

// ParseNetworks reads a comma-separated list of networks, each as
// ParsePrefix reads it, in their order; empty means none. It is the form of
// the trustedProxies setting: the proxies in front of the gateway (load
// balancers, ingress), whose X-Forwarded-For names the client a key's
// networks are checked against.
func ParseNetworks(csv string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(csv, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		p, err := ParsePrefix(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// canonicalCIDRs sorts ps and drops duplicates, in place.
func canonicalCIDRs(ps []netip.Prefix) []netip.Prefix {
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(ps)
}

// validCIDRs checks networks given to Create without ParseCIDRs.
func validCIDRs(ps []netip.Prefix) bool {
	if len(ps) > MaxCIDRs {
		return false
	}
	for _, p := range ps {
		if !p.IsValid() || p != p.Masked() || p.Addr().Is4In6() || p.Addr().Zone() != "" {
			return false
		}
	}
	return true
}

// AllowsSource reports whether a request from addr may use the key: always
// when the key names no network, else when addr is in one of them. An
// IPv4-mapped IPv6 address counts as the IPv4 address it holds; an invalid
// address (unknown source) is allowed only by a key without networks.
func (k Key) AllowsSource(addr netip.Addr) bool {
	if len(k.AllowedCIDRs) == 0 {
		return true
	}
	addr = addr.Unmap().WithZone("")
	for _, p := range k.AllowedCIDRs {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// formatCIDRs is the record's form of a key's networks: comma-separated.
func formatCIDRs(ps []netip.Prefix) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}

// parseStoredCIDRs reads formatCIDRs' form back.
func parseStoredCIDRs(s string) ([]netip.Prefix, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]netip.Prefix, len(parts))
	for i, part := range parts {
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}
