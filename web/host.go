package web

import (
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// A listener with Config.HostCheck (the admin listener) answers only to
// names that are its own. A page of any site, open in an operator's
// browser, can make its own name resolve to the listener's address (DNS
// rebinding): the browser then sends that page's requests there, as
// same-origin ones, with the page's name in Host. So a Host that is not an
// IP address, a loopback name or one of the configured names (the
// operator's, for the dashboard's and the scraper's way in) is refused
// before any route. An IP address cannot be rebound: a page served from the
// listener's own address and port is the listener's.

// hostAllowed reports whether a listener with HostCheck answers a request
// for host (the Host header or the request target's authority, with or
// without a port): "" (HTTP/1.0 without Host: no browser sends it), an IP
// address, localhost or a name under .localhost (which browsers resolve to
// loopback themselves, RFC 6761), or one of names.
func hostAllowed(host string, names []string) bool {
	if host == "" {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return host == "localhost" || strings.HasSuffix(host, ".localhost") || slices.Contains(names, host)
}

// withHost refuses a request for a name that is not the listener's (421,
// before any route; see above).
func (c *chain) withHost(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (Answer, error) {
		if !hostAllowed(r.Host, c.Hosts) {
			return Answer{}, &Error{Code: "host_not_allowed",
				Detail: "The admin listener answers only to its IP addresses, localhost and the names in adminHosts (GATEWAY_ADMIN_HOSTS): add this request's host name there if it is one of yours."}
		}
		return next(w, r)
	}
}
