package admin_test

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/invoicing"
)

// nullable are the members the admin API documents as possibly null (by
// name, or as parent.name): a time that has not happened, a cursor on the
// last page, a rate without attempts, a key's roll, a what-if's worst
// minute and smallest burst. Any other member answered null is a list or an
// object that should have been empty.
var nullable = map[string]bool{
	"next": true, "successRate": true,
	"lastUsedAt": true, "revokedAt": true, "expiresAt": true, "replaces": true, "replacedBy": true,
	"lastSuccessAt": true, "failingSince": true, "disabledAt": true, "previousSecretUntil": true,
	"nextAttemptAt": true, "doneAt": true,
	"worstMinute": true, "smallestBurst.burst": true, // nothing refused; no burst fits
}

// Every list of the admin API answers [] when empty, never null: each GET
// route of admin.go (a route added there is covered without editing this
// test), and the queries that find nothing, on a company with no keys,
// endpoints, usage or audit entries, and an endpoint with no deliveries.
func TestAdminListsAnswerEmptyArrays(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	auth := map[string]string{"Authorization": "Bearer " + in.adminToken, "X-Actor": "ana@platform"}
	ep := do(t, in.admin.URL, req{Method: "POST", Path: "/admin/v1/companies/" + coA + "/webhooks",
		Body: `{"mode":"TEST","url":"http://127.0.0.1:9/hook"}`, Header: auth})
	hook, _ := ep.json(t)["id"].(string)
	key := in.key(t, coA, invoicing.Live, "clients:read").ID
	var paths []string
	for _, rt := range adminRoutes(t) {
		if rt[0] != "GET" || strings.HasPrefix(rt[1], "/debug/") {
			continue
		}
		id := coB // a company with nothing
		switch {
		case strings.HasPrefix(rt[1], "/admin/v1/webhooks/"):
			id = hook // no deliveries
		case strings.HasPrefix(rt[1], "/admin/v1/keys/"):
			id = key
		}
		p := strings.Replace(rt[1], ":id", id, 1)
		switch {
		case rt[1] == "/admin/v1/keys":
			p += "?companyId=" + coB
		case strings.HasSuffix(rt[1], "/limits/whatif"): // a limit to try, in a mode
			p += "?mode=LIVE&rate=1&burst=1"
		case strings.HasSuffix(rt[1], "/limits/shape"):
			p += "?mode=LIVE"
		}
		paths = append(paths, p)
	}
	nobody := "0a5e7c1e-0000-4000-8000-0000000000ff"
	paths = append(paths, "/admin/v1/companies?search="+url.QueryEscape("no such company"), "/admin/v1/companies?ids="+nobody,
		"/admin/v1/webhooks/"+hook+"/deliveries?state=failed&type=invoice.paid", "/admin/v1/companies/"+coA+"/webhooks")
	for _, p := range paths {
		r := do(t, in.admin.URL, req{Path: p, Header: auth})
		if r.Status != 200 {
			t.Errorf("GET %s: %d %s", p, r.Status, r.Body)
			continue
		}
		var v any
		if err := json.Unmarshal(r.Body, &v); err != nil {
			t.Fatalf("GET %s: %v", p, err)
		}
		checkNoNull(t, p, "", v)
	}
}

// checkNoNull fails on a member of v (at its place in the answer) that is
// null and not nullable.
func checkNoNull(t *testing.T, path, at string, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		parent := at[strings.LastIndex(at, ".")+1:]
		for k, m := range v {
			if m == nil && !nullable[k] && !nullable[parent+"."+k] {
				t.Errorf("GET %s: %s.%s is null", path, at, k)
			}
			checkNoNull(t, path, at+"."+k, m)
		}
	case []any:
		for i, m := range v {
			checkNoNull(t, path, at+"["+strconv.Itoa(i)+"]", m)
		}
	}
}
