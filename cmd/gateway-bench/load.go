package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// The operations of the mix, with their default weights.
var benchOps = []struct {
	name   string
	weight int
}{
	{"list-invoices", 25}, {"list-invoices-filter", 15}, {"list-invoices-deep", 5}, {"get-invoice", 20},
	{"list-clients", 10}, {"get-client", 20}, {"create-client", 5},
	// Not in the realistic mix: the list targets of docs/performance.md, one
	// filter and one deep page, to set against list-invoices.
	{"list-invoices-overdue", 0}, {"list-invoices-page2000", 0}, {"search-clients", 0},
}

func opNames() string {
	var names []string
	for _, op := range benchOps {
		names = append(names, op.name)
	}
	return strings.Join(names, ", ")
}

func mixWeights(mix string) ([]int, error) {
	w := make([]int, len(benchOps))
	for i, op := range benchOps {
		if mix == "all" {
			w[i] = op.weight
		} else if mix == op.name {
			w[i] = 1
			return w, nil
		}
	}
	if mix != "all" {
		return nil, fmt.Errorf("%w: --mix must be all or one of %s", errUsage, opNames())
	}
	return w, nil
}

// targeter picks, for each request, an operation by weight, a company and one
// of its keys, uniformly.
func (b *bencher) targeter(base string, weights []int) vegeta.Targeter {
	total := 0
	for _, w := range weights {
		total += w
	}
	filters := []string{"&status=PAID", "&status=OVERDUE", "&type=FT", "&from=2025-01-01&to=2025-06-30", "&status=ISSUED&type=FR"}
	return func(t *vegeta.Target) error {
		c := b.companies[rand.IntN(len(b.companies))]
		k := c.keys[rand.IntN(len(c.keys))]
		pick, op := rand.IntN(total), ""
		for i, w := range weights {
			if pick < w {
				op = benchOps[i].name
				break
			}
			pick -= w
		}
		t.Method, t.Body = http.MethodGet, nil
		t.Header = http.Header{"Authorization": {"Bearer " + k.secret}, "X-Company-Id": {c.id}}
		path := ""
		switch op {
		case "list-invoices":
			path = "/invoices?page=1&pageSize=20"
		case "list-invoices-filter":
			path = "/invoices?page=1&pageSize=20" + filters[rand.IntN(len(filters))]
		case "list-invoices-deep":
			path = "/invoices?pageSize=100&page=" + strconv.Itoa(1+rand.IntN(c.lastPage))
		case "list-invoices-overdue": // status first: opOf tells it from the mix's filters
			path = "/invoices?status=OVERDUE&page=1&pageSize=20"
		case "list-invoices-page2000":
			path = "/invoices?page=2000&pageSize=20"
		case "get-invoice":
			path = "/invoices/" + pickID(c.invoices)
		case "list-clients":
			path = "/clients?page=1&pageSize=20"
			if c.searchFor != "" && rand.IntN(4) == 0 {
				path += "&search=" + url.QueryEscape(c.searchFor)
			}
		case "search-clients": // search first: opOf tells it from list-clients
			path = "/clients?search=" + url.QueryEscape(pickID(c.fragments)) + "&page=1&pageSize=20"
		case "get-client":
			path = "/clients/" + pickID(c.clients)
		case "create-client":
			t.Method = http.MethodPost
			t.Header.Set("Content-Type", "application/json")
			t.Body = []byte(`{"name":"Cliente de carga ` + strconv.FormatInt(b.seq.Add(1), 10) + `"}`)
			path = "/clients"
		}
		t.URL = base + apiBase + path
		return nil
	}
}

// pickID is one of ids, or a well-formed unknown id (a 404) when there is none.
func pickID(ids []string) string {
	if len(ids) == 0 {
		return "00000000-0000-4000-8000-000000000000"
	}
	return ids[rand.IntN(len(ids))]
}

func rateString(r int) string {
	if r <= 0 {
		return "max"
	}
	return strconv.Itoa(r) + "/s"
}

// attack runs the load for d, adding its results to rep (nil: a warm-up).
func (b *bencher) attack(ctx context.Context, tg vegeta.Targeter, d time.Duration, rep *benchReport) {
	if d <= 0 {
		return
	}
	opts := []func(*vegeta.Attacker){
		vegeta.Connections(b.o.connections), vegeta.MaxConnections(b.o.connections),
		vegeta.Workers(uint64(b.o.connections)), vegeta.KeepAlive(true),
		vegeta.Timeout(30 * time.Second), vegeta.MaxBody(0),
	}
	pacer := vegeta.Rate{Freq: b.o.rate, Per: time.Second}
	if b.o.rate <= 0 {
		opts = append(opts, vegeta.MaxWorkers(uint64(b.o.connections)))
		pacer = vegeta.Rate{Freq: 0}
	}
	atk := vegeta.NewAttacker(opts...)
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()
	began := time.Now()
	if rep != nil {
		rep.cpu.begin()
	}
	for res := range atk.Attack(tg, pacer, d, "") {
		if res.Method == http.MethodPost && res.Code >= 200 && res.Code < 300 {
			b.loadCreated.Add(1) // create-client, warm-up included: its event is expected
		}
		if rep != nil {
			rep.add(res)
		}
	}
	if rep != nil {
		rep.cpu.end()
		rep.elapsed += time.Since(began)
	}
}
