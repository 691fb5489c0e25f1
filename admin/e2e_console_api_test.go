package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The admin API's reads that the console pages through: companies by name
// or NIF, a company's keys, an endpoint's success rate.

// page is a list answer of the admin API.
type page struct {
	Data []map[string]any `json:"data"`
	Next *string          `json:"next"`
}

func readPage(t *testing.T, r resp) page {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var p page
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func field(p page, name string) []string {
	out := make([]string, len(p.Data))
	for i, d := range p.Data {
		out[i], _ = d[name].(string)
	}
	return out
}

func TestCompaniesByNameOrNIF(t *testing.T) {
	t.Parallel()
	in := newWorld(t).start()
	auth := map[string]string{"Authorization": "Bearer " + in.adminToken}
	get := func(query string) resp {
		return do(t, in.admin.URL, req{Path: "/admin/v1/companies?" + query, Header: auth})
	}
	if p := readPage(t, get("search=kianda")); len(p.Data) != 1 || p.Data[0]["id"] != coA || p.Data[0]["nif"] != "5417000010" ||
		p.Data[0]["name"] != "Kianda Comércio e Serviços Lda" || p.Data[0]["status"] != "active" || p.Next != nil {
		t.Errorf("search kianda: %+v", p)
	}
	if got := field(readPage(t, get("search="+url.QueryEscape("5417 000 020"))), "name"); !slices.Equal(got, []string{"Muxima Tecnologia SA"}) {
		t.Errorf("search by NIF: %q", got)
	}
	if got := field(readPage(t, get("search=palanca")), "status"); !slices.Equal(got, []string{"suspended"}) {
		t.Errorf("the suspended company: %q", got)
	}
	// Every company, a page of one at a time, each once, in name order.
	var names []string
	cursor := ""
	for range 10 {
		p := readPage(t, get("limit=1&cursor="+url.QueryEscape(cursor)))
		names = append(names, field(p, "name")...)
		if p.Next == nil {
			break
		}
		cursor = *p.Next
	}
	if len(names) < 3 || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("pages of one: %q", names)
	}
	all := field(readPage(t, get("limit=100")), "name")
	if !slices.Equal(names, all) {
		t.Errorf("pages of one %q, one page %q", names, all)
	}
	// The names of ids known: unknown and malformed ids are left out.
	if got := field(readPage(t, get("ids="+coB+","+coA+",not-an-id,0a5e7c1e-0000-4000-8000-0000000000ff")), "id"); !slices.Equal(got, []string{coA, coB}) {
		t.Errorf("by ids: %q", got)
	}
	for _, q := range []string{"limit=0", "limit=101", "cursor=bm9wZQ", "ids=" + idList(101)} {
		expectProblem(t, get(q), 400, "invalid_parameter")
	}
	expectProblem(t, do(t, in.admin.URL, req{Path: "/admin/v1/companies?search=kianda"}), 401, "unauthorized_admin")
}

func idList(n int) string {
	s := ""
	for i := range n {
		if i > 0 {
			s += ","
		}
		s += gendata.DemoCompanyA
	}
	return s
}

func TestKeysPaged(t *testing.T) {
	t.Parallel()
	in := newWorld(t).start()
	auth := map[string]string{"Authorization": "Bearer " + in.adminToken}
	var made []string
	for range 5 {
		made = append(made, in.key(t, coA, invoicing.Live, allScopes).ID)
		in.clock.Add(time.Millisecond) // distinct creation times, and one shared below
	}
	made = append(made, in.key(t, coA, invoicing.Test, allScopes).ID, in.key(t, coA, invoicing.Test, allScopes).ID)
	var got []string
	cursor := ""
	pages := 0
	for range 10 {
		p := readPage(t, do(t, in.admin.URL, req{Path: "/admin/v1/keys?companyId=" + coA + "&limit=2&cursor=" + url.QueryEscape(cursor), Header: auth}))
		pages++
		if len(p.Data) > 2 {
			t.Fatalf("a page of %d keys, limit 2", len(p.Data))
		}
		got = append(got, field(p, "id")...)
		if p.Next == nil {
			break
		}
		cursor = *p.Next
	}
	whole := field(readPage(t, do(t, in.admin.URL, req{Path: "/admin/v1/keys?companyId=" + coA, Header: auth})), "id")
	if !slices.Equal(got, whole) || len(got) != len(made) || pages != 4 {
		t.Errorf("pages of 2 (%d): %q, one page: %q, made %q", pages, got, whole, made)
	}
	for _, id := range made {
		if !slices.Contains(got, id) {
			t.Errorf("key %s not listed", id)
		}
	}
	// Newest first: the two keys of the last millisecond come first.
	if !slices.Contains(got[:2], made[5]) || !slices.Contains(got[:2], made[6]) || got[len(got)-1] != made[0] {
		t.Errorf("order: %q, made %q", got, made)
	}
	for _, q := range []string{"limit=0", "limit=101", "cursor=nope", "cursor=12:"} {
		expectProblem(t, do(t, in.admin.URL, req{Path: "/admin/v1/keys?companyId=" + coA + "&" + q, Header: auth}), 400, "invalid_parameter")
	}
}

// An endpoint's success rate over a day, from its delivery log: a receiver
// that refuses each event's first attempt and takes its second succeeds
// half the time.
func TestWebhookSuccessRate(t *testing.T) {
	t.Parallel()
	in := newWorld(t).start(withRetries(50*time.Millisecond, 50*time.Millisecond))
	var mu sync.Mutex
	seen := map[string]int{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		id := r.Header.Get("Webhook-Id")
		if seen[id]++; seen[id] == 1 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	auth := map[string]string{"Authorization": "Bearer " + in.adminToken, "X-Actor": "ana@platform"}
	ep := do(t, in.admin.URL, req{Method: "POST", Path: "/admin/v1/companies/" + coA + "/webhooks", Body: `{"mode":"TEST","url":"` + recv.URL + `"}`, Header: auth})
	id, _ := ep.json(t)["id"].(string)
	stats := func() map[string]any {
		t.Helper()
		r := do(t, in.admin.URL, req{Path: "/admin/v1/webhooks/" + id + "/stats", Header: auth})
		if r.Status != 200 {
			t.Fatalf("stats: %d %s", r.Status, r.Body)
		}
		return r.json(t)
	}
	if s := stats(); s["deliveries"] != 0.0 || s["attempts"] != 0.0 || s["successRate"] != nil || s["complete"] != true {
		t.Errorf("stats without deliveries: %v", s)
	}
	in.runEvents(t)
	for range 3 {
		if r := do(t, in.admin.URL, req{Method: "POST", Path: "/admin/v1/webhooks/" + id + "/test", Header: auth}); r.Status != 202 {
			t.Fatalf("test event: %d %s", r.Status, r.Body)
		}
	}
	testenv.Eventually(t, "the three test events delivered", func() error {
		return testenv.Want(stats()["delivered"], any(3.0), "delivered")
	})
	s := stats()
	if s["deliveries"] != 3.0 || s["pending"] != 0.0 || s["failed"] != 0.0 || s["attempts"] != 6.0 || s["succeeded"] != 3.0 || s["successRate"] != 0.5 {
		t.Errorf("stats: %v", s)
	}
	since, _ := time.Parse(time.RFC3339Nano, s["since"].(string))
	until, _ := time.Parse(time.RFC3339Nano, s["until"].(string))
	if until.Sub(since) != 24*time.Hour {
		t.Errorf("window %v to %v, want a day", since, until)
	}
	if r := do(t, in.admin.URL, req{Path: "/admin/v1/webhooks/" + id + "/stats?hours=1", Header: auth}); r.json(t)["attempts"] != 6.0 {
		t.Errorf("stats of the last hour: %s", r.Body)
	}
	for _, q := range []string{"hours=0", "hours=" + strconv.Itoa(7*24+1)} {
		expectProblem(t, do(t, in.admin.URL, req{Path: "/admin/v1/webhooks/" + id + "/stats?" + q, Header: auth}), 400, "invalid_parameter")
	}
	expectProblem(t, do(t, in.admin.URL, req{Path: "/admin/v1/webhooks/ep_aaaaaaaaaaaaaaaaaaaaaaaaaa/stats", Header: auth}), 404, "not_found")
}
