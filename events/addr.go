package events

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Where deliveries may go. A webhook makes the gateway send requests to
// addresses its callers choose: unchecked, an endpoint could make it call a
// database on the private network or a cloud's metadata service (SSRF). An
// endpoint's URL must be https and its host must resolve to public
// addresses only, when it is created or changed and again at every
// connection (DNS can change between the two: the dialer checks the address
// it actually connects to).

// maxURLLen bounds an endpoint's URL.
const maxURLLen = 2048

// nonPublic are blocks that netip's predicates do not cover and that no
// webhook receiver has: shared address space (carrier NAT), "this network",
// IETF protocol assignments, benchmarking, reserved, and NAT64 (whose
// embedded IPv4 address could be private).
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// destinations applies the rules; the operator may allow some networks
// (Config.AllowedNetworks) and plain http (Config.AllowHTTP), for a receiver
// on the same host or network, as the demo has.
type destinations struct {
	allowHTTP bool
	allowed   []netip.Prefix
	lookup    func(ctx context.Context, host string) ([]netip.Addr, error)
}

// checkAddr refuses an address that is not public, unless allowed.
func (d *destinations) checkAddr(ip netip.Addr) error {
	ip = ip.Unmap()
	for _, p := range d.allowed {
		if p.Contains(ip) {
			return nil
		}
	}
	what := ""
	switch {
	case ip.IsLoopback():
		what = "a loopback address"
	case ip.IsPrivate():
		what = "a private address"
	case ip.IsLinkLocalUnicast():
		what = "a link-local address (cloud metadata services live there)"
	case ip.IsUnspecified(), ip.IsMulticast(), !ip.IsGlobalUnicast():
		what = "not a unicast address"
	default:
		for _, p := range nonPublic {
			if p.Contains(ip) {
				what = "in a reserved block (" + p.String() + ")"
			}
		}
	}
	if what != "" {
		return fmt.Errorf("%w: %s is %s: webhooks are sent to public addresses only", ErrInvalidEndpoint, ip, what)
	}
	return nil
}

// checkURL parses an endpoint's URL and checks its form and, by resolving
// its host, its addresses. It returns the URL as it will be used.
func (d *destinations) checkURL(ctx context.Context, raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > maxURLLen {
		return "", badURL("must be 1 to %d characters", maxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return "", badURL("must be an absolute URL such as https://example.com/webhooks")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && d.allowHTTP:
	default:
		return "", badURL("must use https, not %q", invoicing.Clip(u.Scheme))
	}
	if u.User != nil {
		return "", badURL("must not hold a user or password (they would show in logs): the receiver checks each delivery's signature instead")
	}
	if u.Fragment != "" {
		return "", badURL("must not have a fragment (#…)")
	}
	host := u.Hostname()
	if port := u.Port(); port != "" {
		if n, err := net.LookupPort("tcp", port); err != nil || n == 0 {
			return "", badURL("must have a port from 1 to 65535")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := d.resolve(ctx, host)
	if err != nil {
		why := err.Error()
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			why = dnsErr.Err // "no such host", without the resolver's address
		}
		return "", badURL("must name a host that resolves: %s does not resolve (%s)", invoicing.Clip(host), why)
	}
	for _, a := range addrs {
		if err := d.checkAddr(a); err != nil {
			return "", notPublicURL(host, a, err)
		}
	}
	return u.String(), nil
}

// badURL is the url field refused, with why.
func badURL(format string, a ...any) error {
	return invoicing.InvalidField(ErrInvalidEndpoint, "url", format, a...)
}

// notPublicURL is the url field refused because host resolved to ip, which
// checkAddr refused with err: "10.1.2.3 is a private address", or
// "hooks.internal resolves to 10.1.2.3, a private address".
func notPublicURL(host string, ip netip.Addr, err error) error {
	why := strings.TrimPrefix(err.Error(), ErrInvalidEndpoint.Error()+": ")
	what, ok := strings.CutPrefix(why, ip.Unmap().WithZone("").String()+" is ")
	if !ok {
		return badURL("must point to a public address: %s", why)
	}
	what, _, _ = strings.Cut(what, ": ") // the rule, said once by the message
	if _, err := netip.ParseAddr(host); err == nil {
		return badURL("must point to a public address: %s is %s", host, what)
	}
	return badURL("must point to a public address: %s resolves to %s, %s", invoicing.Clip(host), ip.Unmap().WithZone(""), what)
}

func (d *destinations) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{ip}, nil
	}
	lookup := d.lookup
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	addrs, err := lookup(ctx, host)
	if err == nil && len(addrs) == 0 {
		err = fmt.Errorf("no address")
	}
	return addrs, err
}

// control is the delivery dialer's check of the address it connects to,
// after resolution: what a host resolves to when the endpoint was created
// proves nothing about what it resolves to now.
func (d *destinations) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("events: unexpected address %q", address)
	}
	return d.checkAddr(ap.Addr())
}
