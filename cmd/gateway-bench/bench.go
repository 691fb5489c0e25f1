package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

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
	fragments []string // for search-clients
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

	recv        *receiver    // --webhooks
	endpoints   []string     // created, deleted at the end
	changes     *changeSet   // --changes
	loadCreated atomic.Int64 // clients the load created (their events are expected too)
	failed      error        // the run's verdict, told after its report
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
			if err := b.create(ctx, http.MethodPut, "/admin/v1/companies/"+id+"/limits", body, nil); err != nil {
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
		if err := b.create(ctx, http.MethodPost, "/admin/v1/keys", body, &v); err != nil {
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
	// search-clients: the first four letters of each word of the clients'
	// names (of a person's first and last names, a business's words), so
	// that a run asks for fragments common and rare.
	seen := map[string]bool{}
	for _, x := range clients.Data {
		for _, w := range strings.Fields(x.Name) {
			if r := []rune(strings.ToLower(w)); len(r) >= 4 && !seen[string(r[:4])] {
				seen[string(r[:4])] = true
				c.fragments = append(c.fragments, string(r[:4]))
			}
		}
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

// create sends an admin call that makes something the run must undo (a
// key, an endpoint, raised limits). Once sent, it is seen to its answer
// even if the run is interrupted meanwhile: cut off halfway, the change
// could be made without the run knowing it, and so never undone. It is not
// sent at all once ctx is done.
func (b *bencher) create(ctx context.Context, method, path, body string, v any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	return b.admin(ctx, method, path, body, v)
}

func (b *bencher) admin(ctx context.Context, method, path, body string, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, b.o.adminURL+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+b.o.adminToken)
	// Changes name their actor in the audit log: this tool, on this host.
	req.Header.Set("X-Actor", benchActor())
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return b.do(req, v)
}

// benchActor is how the audit log names the keys and limits this tool
// changes.
func benchActor() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return "gateway-bench@" + host
}

func (b *bencher) do(req *http.Request, v any) error {
	res, err := b.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if res.StatusCode >= 300 {
		return &apiError{req.Method + " " + req.URL.Path, res.StatusCode, res.Status, string(bytes.TrimSpace(data[:min(len(data), 300)]))}
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(data, v)
}

// apiError is an answer other than 2xx, with the start of its body.
type apiError struct {
	call       string
	status     int
	statusText string
	body       string
}

func (e *apiError) Error() string { return e.call + ": " + e.statusText + ": " + e.body }

// cleanup deletes the webhook endpoints it created (first: what waits for
// them goes too), revokes the keys it created and resets the limits it
// raised.
func (b *bencher) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// One left behind would queue events for a receiver that is gone, and
	// retry them for days: say which.
	if err := parallel(len(b.endpoints), 16, func(i int) error {
		return b.admin(ctx, http.MethodDelete, "/admin/v1/webhooks/"+b.endpoints[i], "", nil)
	}); err != nil {
		fmt.Fprintf(b.out, "cleanup: webhook endpoints left (delete them with gateway webhooks delete): %v\n", err)
	}
	_ = parallel(len(b.raised), 16, func(i int) error {
		return b.admin(ctx, http.MethodDelete, "/admin/v1/companies/"+b.raised[i]+"/limits", "", nil)
	})
	_ = parallel(len(b.created), 16, func(i int) error {
		return b.admin(ctx, http.MethodDelete, "/admin/v1/keys/"+b.created[i].id, "", nil)
	})
	if b.recv != nil {
		b.recv.close()
	}
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
