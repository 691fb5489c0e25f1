package events

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// env is one test's platform database (the sandbox: TEST endpoints read
// it), its Redis prefix and a real HTTP receiver.
type env struct {
	t       *testing.T
	db      *pgxpool.Pool // the platform's writes
	url     string        // the platform's database
	store   *backend.Store
	rdb     *redis.Client
	prefix  string
	recv    *receiver
	company string
}

const testCompany = "a0000000-0000-4000-8000-00000000000a"

func newEnv(t *testing.T) *env {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	return newEnvOn(t, rdb, prefix)
}

// redises runs f on the real Redis and on miniredis (which the demo runs
// on): the scripts must work the same on both.
func redises(t *testing.T, f func(t *testing.T, rdb *redis.Client, prefix string)) {
	t.Run("redis", func(t *testing.T) {
		rdb, prefix := testenv.Redis(t)
		f(t, rdb, prefix)
	})
	t.Run("miniredis", func(t *testing.T) {
		rdb, _ := testenv.Miniredis(t)
		f(t, rdb, "")
	})
}

func newEnvOn(t *testing.T, rdb *redis.Client, prefix string) *env {
	t.Helper()
	ctx := context.Background()
	url := testenv.Postgres(t)
	if err := backend.ApplySchema(ctx, url); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `INSERT INTO companies (id, legal_name, nif) VALUES ($1, 'Empresa A', '5000000001')`, testCompany); err != nil {
		t.Fatal(err)
	}
	store, err := backend.Open(ctx, backend.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return &env{t: t, db: pool, url: url, store: store, rdb: rdb, prefix: prefix, recv: newReceiver(t), company: testCompany}
}

// config is a fast configuration for tests: ticks of 20 ms, a settle of
// 300 ms, retries after 50, 100 and 200 ms, and loopback receivers allowed.
func (e *env) config() Config {
	return Config{
		Redis: e.rdb, Prefix: e.prefix, Sources: map[invoicing.Mode]Source{invoicing.Test: e.store.Changes()},
		AllowHTTP: true, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Timeout: 2 * time.Second, Tick: 20 * time.Millisecond, Settle: 300 * time.Millisecond, Sweep: 4 * time.Second,
		Schedule: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}, Retention: time.Hour,
		Logger: slog.New(slog.NewTextHandler(e.t.Output(), nil)),
	}
}

// clocked is config() on a clock that the test moves, starting now.
func (e *env) clocked() (Config, *testenv.Clock) {
	clock := testenv.NewClock(time.Now())
	cfg := e.config()
	cfg.Now = clock.Now
	return cfg, clock
}

func (e *env) service(cfg Config) *Service {
	e.t.Helper()
	s, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// run runs s until the test ends (or stop is called).
func (e *env) run(s *Service) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	e.t.Cleanup(stop)
	return stop
}

// endpoint creates a TEST endpoint of the company to the receiver.
func (e *env) endpoint(s *Service, types ...string) (Webhook, string) {
	e.t.Helper()
	ep, secret, err := s.CreateWebhook(context.Background(), NewWebhook{CompanyID: e.company, Mode: invoicing.Test, URL: e.recv.url(), Types: types})
	if err != nil {
		e.t.Fatal(err)
	}
	return ep, secret
}

// exec runs a statement on the platform's database.
func (e *env) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.db.Exec(context.Background(), sql, args...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

func (e *env) insertClient(id, name string) {
	e.exec(`INSERT INTO customers (id, company_id, name, nif) VALUES ($1, $2, $3, NULL)`, id, e.company, name)
}

// insertDoc adds a document with one line; state "issued", "paid"... with
// issued_at now (nil for a draft) and due date due ("" for none).
func (e *env) insertDoc(id, typ string, seq int, state, due string) {
	var dueArg any
	if due != "" {
		dueArg = due
	}
	issued := "now()"
	if state == "draft" {
		issued = "NULL"
	}
	e.exec(`INSERT INTO documents (id, company_id, doc_type, series, seq, state, customer_name, net_total, tax_total, gross_total, issued_at, due_date)
VALUES ($1, $2, $3, '2026', $4, $5, 'Consumidor', 100, 14, 114, `+issued+`, $6)`, id, e.company, typ, seq, state, dueArg)
	e.exec(`INSERT INTO document_lines (document_id, line_no, description, quantity, unit_price, tax_rate, line_total) VALUES ($1, 1, 'Serviço', 1, 100, 14, 100)`, id)
}

func (e *env) setState(id, state string) {
	e.exec(`UPDATE documents SET state = $2, updated_at = now() WHERE id = $1`, id, state)
}

// delivery is one request the receiver got.
type delivery struct {
	header http.Header
	body   []byte
	parsed struct {
		Type      Type            `json:"type"`
		Timestamp string          `json:"timestamp"`
		CompanyID string          `json:"companyId"`
		Mode      invoicing.Mode  `json:"mode"`
		Data      json.RawMessage `json:"data"`
	}
	id     string // the data's id
	status int    // what the receiver answered
}

// receiver is a real HTTP server that records deliveries and answers with
// the status it is set to.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	got    []delivery
	status int
	hold   chan struct{} // when set, requests wait for it to close
	notify chan struct{}
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t, status: http.StatusOK, notify: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) url() string { return r.srv.URL + "/hooks?token=t" }

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	hold, status := r.hold, r.status
	r.mu.Unlock()
	if hold != nil {
		<-hold
	}
	d := delivery{header: req.Header.Clone(), body: body, status: status}
	_ = json.Unmarshal(body, &d.parsed)
	var data struct{ ID string }
	_ = json.Unmarshal(d.parsed.Data, &data)
	d.id = data.ID
	r.mu.Lock()
	r.got = append(r.got, d)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"received":true}`)
}

func (r *receiver) setStatus(code int) {
	r.mu.Lock()
	r.status = code
	r.mu.Unlock()
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// atLeast is the error an Eventually condition returns while got < want.
func atLeast(got, want int, what string) error {
	if got >= want {
		return nil
	}
	return fmt.Errorf("%s: %d, want at least %d", what, got, want)
}

// key names an event by what it is about: its type and resource.
type key struct {
	typ Type
	id  string
}

// waitFor waits (up to a generous deadline) until the receiver has had,
// with a 2xx answer or not, a delivery of each wanted event.
func (r *receiver) waitFor(want ...key) []delivery {
	r.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		got := r.deliveries()
		have := map[key]bool{}
		for _, d := range got {
			have[key{d.parsed.Type, d.id}] = true
		}
		missing := []key{}
		for _, k := range want {
			if !have[k] {
				missing = append(missing, k)
			}
		}
		if len(missing) == 0 {
			return got
		}
		select {
		case <-r.notify:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			r.t.Fatalf("still missing %v after 60 s; got %d deliveries", missing, len(got))
		}
	}
}
