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

// Public address space, as an allow-list: IPv6's global unicast block
// 2000::/3 and all of IPv4, minus every block of IANA's special-purpose
// registries (RFC 6890 and its updates). Subtracting bad ranges from what
// net/netip calls global unicast let through what it does not know is
// special: IPv4-compatible (::127.0.0.1), IPv4-translated
// (::ffff:0:7f00:1), 6to4 (2002::/16, which embeds an IPv4 address such as
// 127.0.0.1), Teredo (2001::/32), site-local (fec0::/10), discard-only
// (100::/64), documentation and the IPv4 special blocks. A new special
// block joins one of these lists; anything outside public space stays
// refused without one.
var (
	publicV6 = netip.MustParsePrefix("2000::/3")
	// special lists the registries' blocks inside public space, with what
	// each is, for the error.
	special = []struct {
		p    netip.Prefix
		what string
	}{
		{netip.MustParsePrefix("0.0.0.0/8"), `"this network"`},
		{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
		{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address"},
		{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
		{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address (cloud metadata services live there)"},
		{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
		{netip.MustParsePrefix("192.0.0.0/24"), "reserved for IETF protocols"},
		{netip.MustParsePrefix("192.0.2.0/24"), "reserved for documentation"},
		{netip.MustParsePrefix("192.31.196.0/24"), "reserved for AS112 DNS service"},
		{netip.MustParsePrefix("192.52.193.0/24"), "reserved for AMT relays"},
		{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay address"},
		{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
		{netip.MustParsePrefix("192.175.48.0/24"), "reserved for AS112 DNS service"},
		{netip.MustParsePrefix("198.18.0.0/15"), "reserved for benchmarks"},
		{netip.MustParsePrefix("198.51.100.0/24"), "reserved for documentation"},
		{netip.MustParsePrefix("203.0.113.0/24"), "reserved for documentation"},
		{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
		{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
		{netip.MustParsePrefix("2001::/23"), "reserved for IETF protocols (Teredo among them)"},
		{netip.MustParsePrefix("2001:db8::/32"), "reserved for documentation"},
		{netip.MustParsePrefix("2002::/16"), "a 6to4 address, which embeds an IPv4 address"},
		{netip.MustParsePrefix("2620:4f:8000::/48"), "reserved for AS112 DNS service"},
		{netip.MustParsePrefix("3fff::/20"), "reserved for documentation"},
	}
)

// destinations applies the rules; the operator may allow some networks
// (Config.AllowedNetworks) and plain http (Config.AllowHTTP), for a receiver
// on the same host or network, as the demo has.
type destinations struct {
	allowHTTP bool
	allowed   []netip.Prefix
	lookup    func(ctx context.Context, host string) ([]netip.Addr, error)
}

// checkAddr refuses an address outside public space, unless allowed.
func (d *destinations) checkAddr(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	for _, p := range d.allowed {
		if p.Contains(ip) {
			return nil
		}
	}
	if what := notPublic(ip); what != "" {
		return fmt.Errorf("%w: %s is %s: webhooks go to public internet addresses only", ErrInvalidWebhook, ip, what)
	}
	return nil
}

// notPublic says what ip is when it is not a public address ("" when it
// is one). ip is unmapped: an IPv4-mapped address is judged as the IPv4
// address it maps.
func notPublic(ip netip.Addr) string {
	switch {
	case ip.Is6() && ip.IsLoopback():
		return "a loopback address"
	case ip.Is6() && ip.IsLinkLocalUnicast():
		return "a link-local address (cloud metadata services live there)"
	case ip.Is6() && ip.IsPrivate():
		return "a private address"
	case ip.Is6() && !publicV6.Contains(ip):
		return "outside public IPv6 space (2000::/3)"
	}
	for _, s := range special {
		if s.p.Contains(ip) {
			return s.what
		}
	}
	return ""
}

// checkURL parses an endpoint's URL and checks its form and, by resolving
// its host, its addresses. It returns the URL as it will be used.
func (d *destinations) checkURL(ctx context.Context, raw string) (string, error) {
	return d.checkURLOf(ctx, raw, false)
}

// checkRestoredURL is checkURL of an endpoint an import restores, which
// keeps a host that does not resolve now: a receiver's DNS outage must not
// hold up a restore, and every delivery checks the address it connects to
// (control). Every other refusal stands.
func (d *destinations) checkRestoredURL(ctx context.Context, raw string) error {
	_, err := d.checkURLOf(ctx, raw, true)
	return err
}

func (d *destinations) checkURLOf(ctx context.Context, raw string, unresolvedOK bool) (string, error) {
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
	if err != nil && unresolvedOK {
		return u.String(), nil
	}
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
	return invoicing.InvalidField(ErrInvalidWebhook, "url", format, a...)
}

// notPublicURL is the url field refused because host resolved to ip, which
// checkAddr refused with err: "10.1.2.3 is a private address", or
// "hooks.internal resolves to 10.1.2.3, a private address".
func notPublicURL(host string, ip netip.Addr, err error) error {
	why := strings.TrimPrefix(err.Error(), ErrInvalidWebhook.Error()+": ")
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
