package web

import (
	"net/netip"
	"strings"
)

// Addr is the address the request comes from (clientAddr, with the
// listener's TrustedProxies); the zero Addr when it cannot be known. A
// State is thereby the source a key store bounds the lookups of unknown
// keys by (authz.Source), at no allocation of its own.
func (st *State) Addr() netip.Addr {
	a, _ := clientAddr(st.remoteAddr, st.reqHeader.Values("X-Forwarded-For"), st.proxies)
	return a
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
