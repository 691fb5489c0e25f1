package invoicing

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// The forms of the listeners' settings that name other hosts: the origins
// CORS lets in and the host names the admin listener answers to. The
// configuration checks them when it is loaded, without the HTTP layer; the
// binary hands web the lists they read.

// originHost is a DNS name or a bracketed IPv6 address, with an optional port:
// no wildcard can slip in as a host.
var originHost = regexp.MustCompile(`^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?$`)

// ParseOrigins reads a comma-separated list of origins
// ("https://app.example.ao, http://localhost:3000") into their canonical
// form (scheme://host[:port], lower case). Empty input is an empty list.
// "*", paths, queries and user info are refused: each allowed origin is named.
func ParseOrigins(s string) ([]string, error) {
	var out []string
	for _, raw := range strings.Split(s, ",") {
		o := strings.TrimSpace(raw)
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !originHost.MatchString(strings.ToLower(u.Host)) ||
			u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "/") {
			return nil, fmt.Errorf("%q is not an origin (scheme://host[:port], e.g. https://app.example.ao; \"*\" is not allowed)", o)
		}
		out = append(out, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	return out, nil
}

// ParseHosts reads a list of host names a listener that checks Host
// answers to (the adminHosts setting: web.Config.Hosts): comma-separated, no port, no wildcard, besides
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
