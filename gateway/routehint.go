package gateway

import "strings"

// apiPaths are the API operations' paths below apiPrefix, as the router
// writes them, the longer first: a 404 on the public listener names the one
// a wrong path was meant to be (routeHint).
var apiPaths = [][]string{{"invoices", ":id"}, {"clients", ":id"}, {"invoices"}, {"clients"}, {"events"}}

// routeHint is the detail of the public listener's 404 route_not_found.
// A path whose end is one of the operations' paths (the "/api/v1/invoices"
// or "/v1/clients" of some release notes, a segment missing or doubled, a
// trailing slash, another letter case) is answered with that operation's
// path as the document writes it: a newcomer who got the prefix wrong
// learns the right one. The path sent is never echoed (callers paste keys
// and names into it): the path named is the operation's own.
func routeHint(path string) string {
	const none = "No route matches this method and path."
	segs := strings.Split(strings.TrimSuffix(path, "/"), "/")
	for _, op := range apiPaths {
		if len(op) >= len(segs) || !tailIs(segs[len(segs)-len(op):], op) {
			continue
		}
		doc := apiPrefix + "/" + strings.ReplaceAll(strings.Join(op, "/"), ":id", "{id}")
		return none + " Did you mean " + doc + "? Every path of the API starts with " + apiPrefix +
			"/ (\"v1\" twice) and ends without a slash."
	}
	return none
}

// tailIs reports whether segs match the pattern op: its words in any letter
// case, a non-empty segment for each parameter.
func tailIs(segs, op []string) bool {
	for i, w := range op {
		if strings.HasPrefix(w, ":") {
			if segs[i] == "" {
				return false
			}
		} else if !strings.EqualFold(segs[i], w) {
			return false
		}
	}
	return true
}
