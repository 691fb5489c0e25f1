package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/gateway"
	"github.com/invoicing-ao/gateway/internal/jsonlog"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
)

// The request path without the database: the whole Handler (request id,
// access log as JSON, recover, security headers, routing, key verification
// with a warm cache, company check, rate limit, query parsing, JSON encoding)
// in front of a Store that returns fixed answers. The target (docs/performance.md,
// Request path) is under 20 µs and 30 allocations per request.
//
// The limiter runs three ways: "local" is its fallback (Redis unreachable),
// "miniredis" an in-process Redis over loopback TCP, "redis" the real server.
// With leases (tenants/lease.go) the last two ask Redis once per lease, not
// per request, so all three cost about the same.

// fixedStore answers every call with the same values, without I/O.
type fixedStore struct {
	gateway.Store // nil: operations not defined below are not benchmarked
	invoices      invoicing.Page[invoicing.Invoice]
	clients       invoicing.Page[invoicing.Client]
	client        invoicing.Client
}

func (f *fixedStore) Company(_ context.Context, id string) (invoicing.Company, error) {
	return invoicing.Company{ID: id, Name: "Bench Lda", Status: "active"}, nil
}
func (f *fixedStore) ListInvoices(context.Context, string, invoicing.InvoiceFilter) (invoicing.Page[invoicing.Invoice], error) {
	return f.invoices, nil
}
func (f *fixedStore) GetInvoice(context.Context, string, string) (invoicing.Invoice, error) {
	return f.invoices.Data[0], nil
}
func (f *fixedStore) ListClients(context.Context, string, invoicing.ClientFilter) (invoicing.Page[invoicing.Client], error) {
	return f.clients, nil
}
func (f *fixedStore) GetClient(context.Context, string, string) (invoicing.Client, error) {
	return f.client, nil
}
func (f *fixedStore) CreateClient(context.Context, string, invoicing.NewClient) (invoicing.Client, error) {
	return f.client, nil
}
func (f *fixedStore) Ping(context.Context) error { return nil }

func strp(s string) *string { return &s }

// newFixedStore makes pages of n invoices (3 items each) and n clients with
// realistic values (accents, nulls, exact decimals).
func newFixedStore(n int) *fixedStore {
	at := time.Date(2026, 3, 1, 9, 15, 2, 120e6, time.UTC)
	f := &fixedStore{}
	for i := 0; i < n; i++ {
		c := invoicing.Client{
			ID: fmt.Sprintf("11000000-0000-4000-8000-%012d", i), Name: fmt.Sprintf("Conceição & Filhos %d, Lda", i),
			NIF: strp("5000123456"), Email: strp("geral@conceicao.co.ao"), Phone: strp("+244923456789"),
			Address: strp("Rua Rainha Ginga 12, Luanda"), Type: strp("COMPANY"), CreatedAt: invoicing.Timestamp{Time: at},
		}
		if i%3 == 0 {
			c.Email, c.Address, c.Type = nil, nil, nil
		}
		f.clients.Data = append(f.clients.Data, c)
		inv := invoicing.Invoice{
			ID: fmt.Sprintf("21000000-0000-4000-8000-%012d", i), Number: fmt.Sprintf("FT 2026/%d", 1000+i), Type: "FT",
			Status: "ISSUED", TotalAmount: "1254300.50", Currency: "AOA", IssuedAt: &invoicing.Timestamp{Time: at},
			DueDate:  strp("2026-03-31"),
			Customer: invoicing.InvoiceCustomer{ID: &c.ID, Name: c.Name, NIF: c.NIF},
		}
		for j := 0; j < 3; j++ {
			inv.Items = append(inv.Items, invoicing.InvoiceItem{Description: "Serviço de manutenção \"premium\"",
				Quantity: "2.5", UnitPrice: "12500.0000", Total: "31250.00"})
		}
		f.invoices.Data = append(f.invoices.Data, inv)
	}
	f.invoices.Total, f.invoices.Page, f.invoices.PageSize = 1_000_000, 1, n
	f.clients.Total, f.clients.Page, f.clients.PageSize = 100_000, 1, n
	f.client = f.clients.Data[0]
	return f
}

// discardWriter is a ResponseWriter that keeps nothing: the benchmark
// measures the gateway, not a recorder.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }

// benchCompanies the requests rotate over: one company's limit (at most
// tenants.MaxRate) would refuse a loop faster than 10 µs per request, and
// real traffic is spread over many companies anyway.
const benchCompanies = 10

// benchCompany is the i-th company of the benchmarks.
func benchCompany(i int) string { return fmt.Sprintf("a0000000-0000-4000-8000-%012d", i) }

// benchKey is a LIVE key of a benchmark company.
type benchKey struct{ secret, company string }

// benchHandler builds the public handler on a fixed store, a real Keyring and
// a real Limiter of the given kind, and returns it with a LIVE key of each of
// benchCompanies companies.
func benchHandler(b *testing.B, limiter string) (http.Handler, []benchKey) {
	b.Helper()
	var keysRedis, limRedis redis.UniversalClient
	prefix := "bench:"
	switch limiter {
	case "local":
		keysRedis, _ = testenv.Miniredis(b)
		testenv.QuietRedisLog(b, "127.0.0.1:1")
		dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
		b.Cleanup(func() { _ = dead.Close() })
		limRedis = dead
	case "miniredis":
		keysRedis, _ = testenv.Miniredis(b)
		limRedis = keysRedis
	case "redis":
		keysRedis, prefix = testenv.Redis(b)
		limRedis = keysRedis
	}
	// As `gateway serve` runs by default: jsonlog's lines, tracing off.
	logger := slog.New(jsonlog.New(io.Discard, nil))
	tp := noop.NewTracerProvider()
	ring := authz.New(authz.Config{Redis: keysRedis, Prefix: prefix + "authz:", Logger: logger, TracerProvider: tp})
	b.Cleanup(func() { _ = ring.Close() })
	lim := tenants.New(tenants.Config{Redis: limRedis, Prefix: prefix + "tenants:", RetryEvery: time.Hour,
		LiveDefault: tenants.Limit{Rate: tenants.MaxRate, Burst: tenants.MaxBurst}, Logger: logger, TracerProvider: tp})
	store := newFixedStore(20)
	srv := gateway.New(gateway.Config{Live: store, Test: store, Keys: ring, Limiter: lim,
		Guard: tenants.NewGuard(tenants.GuardConfig{}), Logger: logger, TracerProvider: tp})
	scopes, err := authz.ParseScopes("invoices:read,clients:read")
	if err != nil {
		b.Fatal(err)
	}
	adm := admin.New(admin.Config{Keys: ring, Limiter: lim, Companies: store, Logger: logger})
	var keys []benchKey
	for i := range benchCompanies {
		v, err := adm.Keys.CreateKey(context.Background(), "bench@local", admin.KeySpec{CompanyID: benchCompany(i), Mode: invoicing.Live, Scopes: scopes, Name: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		keys = append(keys, benchKey{v.Key, benchCompany(i)})
	}
	return srv.Handler(), keys
}

// benchRequests are GET target by each key, in turn.
func benchRequests(b *testing.B, keys []benchKey, target string) []*http.Request {
	var rs []*http.Request
	for _, k := range keys {
		r, err := http.NewRequest(http.MethodGet, target, nil)
		if err != nil {
			b.Fatal(err)
		}
		r.Header.Set("Authorization", "Bearer "+k.secret)
		r.Header.Set("X-Company-Id", k.company)
		rs = append(rs, r)
	}
	return rs
}

func benchRequest(b *testing.B, h http.Handler, keys []benchKey, target string) {
	rs := benchRequests(b, keys, target)
	w := &discardWriter{h: http.Header{}}
	for _, r := range rs {
		h.ServeHTTP(w, r) // warm the key, company and script caches
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	i := 0
	for b.Loop() {
		clear(w.h)
		w.status = 0
		h.ServeHTTP(w, rs[i%len(rs)])
		i++
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
	// The machine is shared: CPU time per request is the figure that other
	// processes' load does not inflate (the wall time per op is ns/op).
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkRequestPath(b *testing.B) {
	targets := []struct{ name, path string }{
		{"ListInvoices20", "/api/v1/v1/invoices?page=1&pageSize=20&status=ISSUED"},
		{"ListClients20", "/api/v1/v1/clients?page=2&pageSize=20"},
		{"GetClient", "/api/v1/v1/clients/11000000-0000-4000-8000-000000000000"},
	}
	for _, lim := range []string{"local", "miniredis", "redis"} {
		for _, tg := range targets {
			b.Run(lim+"/"+tg.name, func(b *testing.B) {
				h, keys := benchHandler(b, lim)
				benchRequest(b, h, keys, "http://gw.test"+tg.path)
			})
		}
	}
}

// BenchmarkRequestPathParallel: the local path from every core at once
// (lock contention in the caches and the limiter shows here).
func BenchmarkRequestPathParallel(b *testing.B) {
	h, keys := benchHandler(b, "local")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rs := benchRequests(b, keys, "http://gw.test/api/v1/v1/invoices?page=1&pageSize=20")
		w := &discardWriter{h: http.Header{}}
		for i := 0; pb.Next(); i++ {
			clear(w.h)
			h.ServeHTTP(w, rs[i%len(rs)])
			if w.status != http.StatusOK {
				b.Errorf("status %d", w.status)
				return
			}
		}
	})
}
