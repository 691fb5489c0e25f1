package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// The load drives a running gateway with a realistic mix of the API's
// operations across many companies and keys, and prints throughput, latency
// percentiles per operation and status counts. With --ceiling it then runs
// the same load against a bare service (ceiling.go) for reference.

// benchOptions are the command's flags.
type benchOptions struct {
	url, adminURL, adminToken string
	keysFile, writeKeys       string
	database                  string
	companyList               string
	companies, keysPerCompany int
	mix                       string
	rate, connections         int
	duration, warmup          time.Duration
	raiseLimits               bool
	ceiling                   bool
	ceilingConns, rounds      int
	pid                       int
}

// benchKey is one API key of one company.
type benchKey struct{ company, id, secret string }

// benchCompany is what the load knows of a company: its keys and some ids.
type benchCompany struct {
	id        string
	keys      []benchKey
	clients   []string
	invoices  []string
	lastPage  int // of the invoice list at 100 per page
	searchFor string
}

// The operations of the mix, with their default weights.
var benchOps = []struct {
	name   string
	weight int
}{
	{"list-invoices", 25}, {"list-invoices-filter", 15}, {"list-invoices-deep", 5}, {"get-invoice", 20},
	{"list-clients", 10}, {"get-client", 20}, {"create-client", 5},
}

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) error {
	fs := flag.NewFlagSet("gateway-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o benchOptions
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080", "base URL of the gateway's public API")
	fs.StringVar(&o.adminURL, "admin-url", "http://127.0.0.1:8081", "base URL of the admin API (to create keys and raise limits)")
	fs.StringVar(&o.adminToken, "admin-token", env("GATEWAY_ADMIN_TOKEN"), "admin token (default $GATEWAY_ADMIN_TOKEN)")
	fs.StringVar(&o.keysFile, "keys-file", "", "use these keys (lines: COMPANY_ID KEY) instead of creating them")
	fs.StringVar(&o.writeKeys, "write-keys", "", "save the created keys to this file (mode 0600) and keep them")
	fs.StringVar(&o.database, "database", env("GATEWAY_LIVE_DATABASE_URL"), "PostgreSQL URL to pick companies from, and the ceiling's database")
	fs.StringVar(&o.companyList, "company", "", "comma-separated company ids to load (before those picked from --database)")
	fs.IntVar(&o.companies, "companies", 0, "further active companies to pick from --database")
	fs.IntVar(&o.keysPerCompany, "keys-per-company", 1, "LIVE keys to create per company (at most 10)")
	fs.StringVar(&o.mix, "mix", "all", "all (the realistic mix), or one operation: "+opNames())
	fs.IntVar(&o.rate, "rate", 0, "requests per second; 0 means as fast as --connections allow")
	fs.IntVar(&o.connections, "connections", 64, "concurrent connections (and workers)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured duration")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured load before the measure (caches, connections)")
	fs.BoolVar(&o.raiseLimits, "raise-limits", false, "lift the companies' LIVE rate limit during the run (reset after)")
	fs.BoolVar(&o.ceiling, "ceiling", false, "then run the same load against a bare service on --database (get-client only)")
	fs.IntVar(&o.rounds, "rounds", 5, "with --ceiling: alternate gateway and ceiling in this many slices of --duration/rounds")
	fs.IntVar(&o.ceilingConns, "ceiling-db-conns", 10, "the bare service's database pool (the gateway's default)")
	fs.IntVar(&o.pid, "pid", 0, "report this process's resident memory (the gateway's) after the run")
	serveCeiling := fs.String("serve-ceiling", "", "internal: serve the bare service on this address")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if *serveCeiling != "" {
		return serveCeilingMain(ctx, *serveCeiling, o.database, o.ceilingConns, stdout)
	}
	weights, err := mixWeights(o.mix)
	if err != nil {
		return err
	}
	if o.ceiling && o.mix != "get-client" {
		return fmt.Errorf("%w: --ceiling serves get-client only; add --mix get-client", errUsage)
	}

	b := &bencher{o: o, out: stdout, http: &http.Client{Timeout: 30 * time.Second}}
	defer b.cleanup()
	if err := b.setup(ctx); err != nil {
		return err
	}
	gwTarget := b.targeter(o.url, weights)
	gw := newBenchReport("gateway")
	if !o.ceiling {
		b.attack(ctx, gwTarget, o.warmup, nil)
		b.attack(ctx, gwTarget, o.duration, gw)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		gw.finish()
		gw.print(stdout)
		if o.pid > 0 {
			printRSS(stdout, o.pid)
		}
		return nil
	}
	// The reference runs in the same command, in alternating slices, so that
	// a change of the machine's load (other processes) hits both alike.
	base, stop, err := startCeiling(ctx, o.database, o.ceilingConns)
	if err != nil {
		return err
	}
	defer stop()
	ref := newBenchReport("ceiling")
	ceilTarget := b.targeter(base, weights)
	b.attack(ctx, gwTarget, o.warmup, nil)
	b.attack(ctx, ceilTarget, o.warmup, nil)
	rounds := max(o.rounds, 1)
	for i := 0; i < rounds && ctx.Err() == nil; i++ {
		b.attack(ctx, gwTarget, o.duration/time.Duration(rounds), gw)
		b.attack(ctx, ceilTarget, o.duration/time.Duration(rounds), ref)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	gw.finish()
	ref.finish()
	gw.print(stdout)
	if o.pid > 0 {
		printRSS(stdout, o.pid)
	}
	ref.print(stdout)
	if ref.throughput > 0 {
		fmt.Fprintf(stdout, "\ngateway / ceiling throughput: %.1f%% (%d alternating rounds)\n", 100*gw.throughput/ref.throughput, rounds)
	}
	return nil
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

// bencher holds one run's companies and what it must undo.
type bencher struct {
	o         benchOptions
	out       io.Writer
	http      *http.Client
	companies []*benchCompany
	created   []benchKey // revoked at the end unless written out
	raised    []string   // companies whose limits are reset at the end
	seq       atomic.Int64
}

func (b *bencher) setup(ctx context.Context) error {
	var err error
	if b.o.keysFile != "" {
		err = b.readKeys()
	} else {
		err = b.createKeys(ctx)
	}
	if err != nil {
		return err
	}
	if b.o.raiseLimits {
		err := parallel(len(b.companies), 16, func(i int) error {
			id := b.companies[i].id
			body := `{"mode":"LIVE","rate":100000,"burst":100000}`
			if err := b.admin(ctx, http.MethodPut, "/admin/v1/companies/"+id+"/limits", body, nil); err != nil {
				return err
			}
			b.note(func() { b.raised = append(b.raised, id) })
			return nil
		})
		if err != nil {
			return err
		}
	}
	// Ids to get, a last page to go deep, and a client name to search for.
	err = parallel(len(b.companies), 16, func(i int) error { return b.discover(ctx, b.companies[i]) })
	if err != nil {
		return err
	}
	keys := 0
	for _, c := range b.companies {
		keys += len(c.keys)
	}
	fmt.Fprintf(b.out, "load: %d companies, %d keys, mix %s, %d connections, rate %s, %s (after %s warm-up)\n",
		len(b.companies), keys, b.o.mix, b.o.connections, rateString(b.o.rate), b.o.duration, b.o.warmup)
	return nil
}

var noteMu sync.Mutex

func (b *bencher) note(f func()) { noteMu.Lock(); f(); noteMu.Unlock() }

// companyIDs are the --company ones, then --companies more from --database.
func (b *bencher) companyIDs(ctx context.Context) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	for _, id := range strings.Split(b.o.companyList, ",") {
		if id = strings.TrimSpace(id); id != "" && !seen[id] {
			ids, seen[id] = append(ids, id), true
		}
	}
	if b.o.companies > 0 {
		if b.o.database == "" {
			return nil, fmt.Errorf("%w: --companies needs --database", errUsage)
		}
		conn, err := pgx.Connect(ctx, b.o.database)
		if err != nil {
			return nil, fmt.Errorf("database: %w", err)
		}
		defer conn.Close(ctx)
		want := len(ids) + b.o.companies
		rows, err := conn.Query(ctx, `SELECT id::text FROM companies WHERE status = 'active' ORDER BY id LIMIT $1`, want)
		if err != nil {
			return nil, fmt.Errorf("database: %w", err)
		}
		picked, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, fmt.Errorf("database: %w", err)
		}
		for _, id := range picked {
			if len(ids) < want && !seen[id] {
				ids, seen[id] = append(ids, id), true
			}
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: name companies with --company or --companies N --database URL", errUsage)
	}
	return ids, nil
}

func (b *bencher) createKeys(ctx context.Context) error {
	if b.o.adminToken == "" {
		return fmt.Errorf("%w: creating keys needs --admin-token (or --keys-file)", errUsage)
	}
	if b.o.keysPerCompany < 1 || b.o.keysPerCompany > 10 {
		return fmt.Errorf("%w: --keys-per-company must be 1..10", errUsage)
	}
	ids, err := b.companyIDs(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		b.companies = append(b.companies, &benchCompany{id: id})
	}
	n := b.o.keysPerCompany
	err = parallel(len(ids)*n, 16, func(i int) error {
		c := b.companies[i/n]
		body := `{"companyId":"` + c.id + `","mode":"LIVE","scopes":["invoices:read","clients:read","clients:write"],"name":"bench"}`
		var v struct{ ID, Key string }
		if err := b.admin(ctx, http.MethodPost, "/admin/v1/keys", body, &v); err != nil {
			return err
		}
		k := benchKey{company: c.id, id: v.ID, secret: v.Key}
		b.note(func() { c.keys = append(c.keys, k); b.created = append(b.created, k) })
		return nil
	})
	if err != nil {
		return err
	}
	if b.o.writeKeys != "" {
		var buf bytes.Buffer
		for _, k := range b.created {
			fmt.Fprintf(&buf, "%s %s\n", k.company, k.secret)
		}
		if err := os.WriteFile(b.o.writeKeys, buf.Bytes(), 0o600); err != nil {
			return err
		}
		b.created = nil // kept for later runs
	}
	return nil
}

func (b *bencher) readKeys() error {
	data, err := os.ReadFile(b.o.keysFile)
	if err != nil {
		return err
	}
	byID := map[string]*benchCompany{}
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return fmt.Errorf("%s:%d: want COMPANY_ID KEY", b.o.keysFile, i+1)
		}
		c := byID[f[0]]
		if c == nil {
			c = &benchCompany{id: f[0]}
			byID[f[0]] = c
			b.companies = append(b.companies, c)
		}
		c.keys = append(c.keys, benchKey{company: f[0], secret: f[1]})
	}
	if len(b.companies) == 0 {
		return fmt.Errorf("%s: no keys", b.o.keysFile)
	}
	return nil
}

// discover reads one page of the company's clients and invoices with its
// first key.
func (b *bencher) discover(ctx context.Context, c *benchCompany) error {
	var clients struct {
		Data []struct{ ID, Name string }
	}
	if err := b.api(ctx, c, "/clients?pageSize=100", &clients); err != nil {
		return err
	}
	var invoices struct {
		Data  []struct{ ID string }
		Total int
	}
	if err := b.api(ctx, c, "/invoices?pageSize=100", &invoices); err != nil {
		return err
	}
	for _, x := range clients.Data {
		c.clients = append(c.clients, x.ID)
	}
	if len(clients.Data) > 0 {
		name := []rune(clients.Data[len(clients.Data)/2].Name)
		c.searchFor = string(name[:min(4, len(name))])
	}
	for _, x := range invoices.Data {
		c.invoices = append(c.invoices, x.ID)
	}
	c.lastPage = min(max(1, (invoices.Total+99)/100), 1000)
	return nil
}

func (b *bencher) api(ctx context.Context, c *benchCompany, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.o.url+apiBase+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.keys[0].secret)
	req.Header.Set("X-Company-Id", c.id)
	return b.do(req, v)
}

func (b *bencher) admin(ctx context.Context, method, path, body string, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, b.o.adminURL+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+b.o.adminToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return b.do(req, v)
}

func (b *bencher) do(req *http.Request, v any) error {
	res, err := b.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if res.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", req.Method, req.URL.Path, res.Status, bytes.TrimSpace(data[:min(len(data), 300)]))
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(data, v)
}

// cleanup revokes the keys it created and resets the limits it raised.
func (b *bencher) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = parallel(len(b.raised), 16, func(i int) error {
		return b.admin(ctx, http.MethodDelete, "/admin/v1/companies/"+b.raised[i]+"/limits", "", nil)
	})
	_ = parallel(len(b.created), 16, func(i int) error {
		return b.admin(ctx, http.MethodDelete, "/admin/v1/keys/"+b.created[i].id, "", nil)
	})
}

// parallel runs f(0..n-1) on at most workers goroutines; the first error wins.
func parallel(n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || errs[w] != nil {
					return
				}
				errs[w] = f(i)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

const apiBase = "/api/v1/v1"

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
		case "get-invoice":
			path = "/invoices/" + pickID(c.invoices)
		case "list-clients":
			path = "/clients?page=1&pageSize=20"
			if c.searchFor != "" && rand.IntN(4) == 0 {
				path += "&search=" + url.QueryEscape(c.searchFor)
			}
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
	for res := range atk.Attack(tg, pacer, d, "") {
		if rep != nil {
			rep.add(res)
		}
	}
	if rep != nil {
		rep.elapsed += time.Since(began)
	}
}
