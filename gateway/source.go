package gateway

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/invoicing-ao/gateway/authz"
)

// ParseTrustedProxies reads the trustedProxies setting: comma-separated
// CIDRs or addresses of the proxies in front of the gateway (load
// balancers, ingress); empty means none.
func ParseTrustedProxies(csv string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(csv, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		p, err := authz.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// clientAddr is the address a request comes from. It is the connection's
// peer, unless the peer is a trusted proxy: then each trusted proxy has
// appended to X-Forwarded-For the address it got the request from, and the
// client is the right-most entry that is not itself a trusted proxy (the
// entries to its left are whatever the client sent, and believed by no
// one). A header from any other peer is ignored. ok is false when the
// address cannot be known: a peer or an entry that is not an address.
func clientAddr(remoteAddr string, xff []string, trusted []netip.Prefix) (netip.Addr, bool) {
	peer, ok := parseHostAddr(remoteAddr)
	if !ok || !inAny(trusted, peer) {
		return peer, ok
	}
	addr := peer
	for i := len(xff) - 1; i >= 0; i-- {
		entries := strings.Split(xff[i], ",")
		for j := len(entries) - 1; j >= 0; j-- {
			if addr, ok = parseHostAddr(strings.TrimSpace(entries[j])); !ok {
				return netip.Addr{}, false
			}
			if !inAny(trusted, addr) {
				return addr, true
			}
		}
	}
	// Every hop is a trusted proxy: the left-most one is where the request
	// entered (or the peer, without the header).
	return addr, true
}

// parseHostAddr reads an address with or without a port ("203.0.113.7",
// "203.0.113.7:5120", "[2001:db8::1]:443", "2001:db8::1"), as IPv4 when it is
// IPv4-mapped, without a zone.
func parseHostAddr(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	}
	return a.Unmap().WithZone(""), true
}

func inAny(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// checkSource refuses a request of a key limited to some networks when it
// comes from elsewhere, or from an address that cannot be known. The answer
// names no network and no address: it tells nothing of the key's settings.
func (s *Server) checkSource(r *http.Request, key authz.Key) error {
	if len(key.AllowedCIDRs) == 0 {
		return nil
	}
	addr, ok := clientAddr(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), s.proxies)
	if !ok || !key.AllowsSource(addr) {
		return &Error{Code: "source_not_allowed", Detail: "This API key is not accepted from the network this request comes from."}
	}
	return nil
}
