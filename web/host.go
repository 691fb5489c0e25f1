package web

import (
	"fmt"
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

// ParseHosts reads a list of host names such a listener answers to (the
// adminHosts setting): comma-separated, no port, no wildcard, besides
// loopback names and IP addresses; empty means none.
func ParseHosts(csv string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(csv, ",") {
		h := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "."))
		if h == "" {
			continue
		}
		if !hostName(h) {
			return nil, fmt.Errorf("%q is not a host name (letters, digits, hyphens and dots; no port, no wildcard)", s)
		}
		out = append(out, h)
	}
	return out, nil
}

// hostName reports whether h is a DNS name of letters, digits and hyphens
// in dot-separated labels.
func hostName(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

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
