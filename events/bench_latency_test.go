package events

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// From the commit of a change to the receiver, with the shipped timing
// (ticks of 1 s, a settle of 5 s): 100 changes a second for 10 seconds
// across 1,000 companies, each with its own endpoint. The p99-ms metric is
// the target's (under 10 s). The load lasts 10 s whatever b.N is.
func BenchmarkCommitToDelivery(b *testing.B) {
	ctx := context.Background()
	const companies, rate, seconds = 1000, 100, 10
	pool, store, ids := benchPlatform(b, companies)
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	arrival := make(chan struct{}, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Data struct{ ID string } `json:"data"`
		}
		_ = decodeJSON(r, &ev)
		mu.Lock()
		if _, ok := arrived[ev.Data.ID]; !ok {
			arrived[ev.Data.ID] = time.Now()
		}
		mu.Unlock()
		signal(arrival)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	rdb, prefix := testenv.Redis(b)
	s, err := New(Config{Redis: rdb, Prefix: prefix, Sources: map[invoicing.Mode]Source{invoicing.Test: store},
		AllowHTTP: true, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		b.Fatal(err)
	}
	for _, co := range ids {
		if _, _, err := s.CreateWebhook(ctx, NewWebhook{CompanyID: co, Mode: invoicing.Test, URL: recv.URL + "/hook", Types: []string{"client.created"}}); err != nil {
			b.Fatal(err)
		}
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.Run(rctx) }()
	defer func() { stop(); <-done }()

	b.ResetTimer()
	committed := map[string]time.Time{}
	tick := time.NewTicker(time.Second / rate)
	for i := range rate * seconds {
		<-tick.C
		id := fmt.Sprintf("11000000-0000-4000-8000-%012d", i)
		if _, err := pool.Exec(ctx, `INSERT INTO customers (id, company_id, name) VALUES ($1, $2, 'Cliente')`, id, ids[i%companies]); err != nil {
			b.Fatal(err)
		}
		committed[id] = time.Now()
	}
	tick.Stop()
	waitSignalled(b, arrival, func() error {
		mu.Lock()
		defer mu.Unlock()
		if n := len(arrived); n < len(committed) {
			return fmt.Errorf("%d of %d events arrived", n, len(committed))
		}
		return nil
	})
	b.StopTimer()
	var lat []float64
	mu.Lock()
	for id, at := range committed {
		lat = append(lat, float64(arrived[id].Sub(at).Milliseconds()))
	}
	mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[len(lat)*99/100], "p99-ms")
	b.ReportMetric(lat[len(lat)-1], "max-ms")
}

// benchPlatform is a platform database of n companies, and a store on it
// that the detector reads; it answers the companies' ids.
func benchPlatform(b *testing.B, n int) (*pgxpool.Pool, *backend.Store, []string) {
	ctx := context.Background()
	url := testenv.Postgres(b)
	if err := backend.ApplySchema(ctx, url); err != nil {
		b.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("a0000000-0000-4000-8000-%012d", i)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO companies (id, legal_name, nif) SELECT id::uuid, 'Empresa', 'N' || n FROM unnest($1::text[]) WITH ORDINALITY AS t(id, n)`, ids); err != nil {
		b.Fatal(err)
	}
	store, err := backend.Open(ctx, backend.Config{URL: url, MaxConns: 4})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(store.Close)
	return pool, store, ids
}
