package events

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// From the commit of a change to the receiver and to the feed, with the
// shipped timing (ticks of 100 ms, read 50 ms behind the database's clock,
// deliveries woken when events are queued): 100 changes a second for 10
// seconds across 1,000 companies, each with its own endpoint. It also
// reports what detection asked of the database, idle and under the load
// (reads and the rows they returned, a second). EVENTS_BENCH_URL points it at a
// database holding `gateway data load --size large` (the million-document
// company among 1,001), whose companies it then uses; else it makes its
// own. The targets: p50 under 300 ms and p99 under 1 s.
func BenchmarkCommitToDelivery(b *testing.B) {
	r := newLatencyRig(b)
	idle := r.dbCost(0, 10*time.Second)()
	busy := r.dbCost(2*time.Second, 10*time.Second) // the load's steady middle
	lat, feed := r.load(b, 100, 14*time.Second)
	report(b, "", lat)
	report(b, "feed-", feed)
	b.ReportMetric(idle.reads, "idle-reads/s")
	b.ReportMetric(idle.rows, "idle-rows/s")
	c := busy()
	b.ReportMetric(c.reads, "busy-reads/s")
	b.ReportMetric(c.rows, "busy-rows/s")
}

// Single changes on an idle gateway, one at a time, 30 of them.
func BenchmarkCommitToDeliveryIdle(b *testing.B) {
	r := newLatencyRig(b)
	var lat []float64
	for i := range 30 {
		id := r.id(1, i)
		at := r.insert(b, id, r.companies[i%len(r.companies)])
		lat = append(lat, ms(r.wait(b, ClientCreated, id).Sub(at)))
		time.Sleep(200 * time.Millisecond)
	}
	report(b, "", lat)
}

// The load of BenchmarkCommitToDelivery while a transaction that updated a
// client at its start stays open 8 s (or 40 s): the others' latency, and
// the late change's from its commit (late-ms).
func BenchmarkCommitToDeliveryLongTransaction(b *testing.B) {
	for _, open := range []time.Duration{8 * time.Second, 40 * time.Second} {
		b.Run("open="+open.String(), func(b *testing.B) {
			r := newLatencyRig(b)
			ctx := context.Background()
			late := r.id(2, 0)
			r.insert(b, late, r.companies[0])
			r.wait(b, ClientCreated, late)
			conn, err := pgx.Connect(ctx, r.url)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close(ctx)
			tx, err := conn.Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `UPDATE customers SET name = 'Mudado no início', updated_at = now() WHERE id = $1`, late); err != nil {
				b.Fatal(err)
			}
			committed := make(chan time.Time, 1)
			go func() {
				time.Sleep(open)
				if err := tx.Commit(ctx); err != nil {
					b.Error(err)
				}
				committed <- time.Now()
			}()
			lat, _ := r.load(b, 100, open+2*time.Second)
			report(b, "", lat)
			b.ReportMetric(ms(r.wait(b, ClientUpdated, late).Sub(<-committed)), "late-ms")
		})
	}
}

// latencyRig is a platform database, a running Service with an endpoint
// per company to one receiver, and when each client's event arrived.
type latencyRig struct {
	url       string
	pool      *pgxpool.Pool
	src       *countingSource
	s         *Service
	companies []string
	mu        sync.Mutex
	arrived   map[string]time.Time // by event type and client id
	arrival   chan struct{}
	run       string // the first group of this run's clients' ids
}

// id is the id of this run's client n.
func (r *latencyRig) id(kind, n int) string {
	return fmt.Sprintf("%s-%04d-4000-8000-%012d", r.run, kind, n)
}

func newLatencyRig(b *testing.B) *latencyRig {
	ctx := context.Background()
	// The ids differ from run to run: on a database of its own, a run
	// adds its clients to those of the runs before.
	r := &latencyRig{arrived: map[string]time.Time{}, arrival: make(chan struct{}, 1), run: fmt.Sprintf("%08x", uint32(time.Now().UnixNano()))}
	r.url = os.Getenv("EVENTS_BENCH_URL")
	if r.url == "" {
		r.url = testenv.Postgres(b)
		if err := backend.ApplySchema(ctx, r.url); err != nil {
			b.Fatal(err)
		}
	}
	var err error
	if r.pool, err = pgxpool.New(ctx, r.url); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.pool.Close)
	r.companies = benchCompanies(b, r.pool, 1000)
	store, err := backend.Open(ctx, backend.Config{URL: r.url, MaxConns: 4})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(store.Close)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var ev struct {
			Type string
			Data struct{ ID string } `json:"data"`
		}
		_ = decodeJSON(req, &ev)
		r.mu.Lock()
		if k := ev.Type + " " + ev.Data.ID; r.arrived[k].IsZero() {
			r.arrived[k] = time.Now()
		}
		r.mu.Unlock()
		signal(r.arrival)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(recv.Close)
	rdb, prefix := testenv.Redis(b)
	r.src = &countingSource{Source: store.Changes()}
	r.s, err = New(Config{Redis: rdb, Prefix: prefix, Sources: map[invoicing.Mode]Source{invoicing.Test: r.src},
		AllowHTTP: true, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		b.Fatal(err)
	}
	for _, co := range r.companies {
		if _, _, err := r.s.CreateWebhook(ctx, NewWebhook{CompanyID: co, Mode: invoicing.Test, URL: recv.URL + "/hook", Types: []string{"client.created", "client.updated"}}); err != nil {
			b.Fatal(err)
		}
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.s.Run(rctx) }()
	b.Cleanup(func() { stop(); <-done })
	// The first ticks read back the recovery window (on a database of its
	// own, the clients of the runs before): measured from once they are done.
	waitSignalled(b, r.arrival, func() error {
		for _, st := range streams {
			raw := rdb.Get(ctx, r.s.l.watermark(invoicing.Test, st.name)).Val()
			if p, ok := decodeMark(raw); !ok || time.Since(*p.At) > time.Second {
				signal(r.arrival) // not a delivery's: look again
				time.Sleep(50 * time.Millisecond)
				return fmt.Errorf("detection of %s not caught up (watermark %q)", st.name, raw)
			}
		}
		return nil
	})
	return r
}

// benchCompanies is up to n companies of the database (its own when it has
// none).
func benchCompanies(b *testing.B, pool *pgxpool.Pool, n int) []string {
	ctx := context.Background()
	var ids []string
	rows, err := pool.Query(ctx, `SELECT id::text FROM companies ORDER BY id LIMIT $1`, n)
	if err == nil {
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		b.Fatal(err)
	}
	if len(ids) > 0 {
		return ids
	}
	ids = make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("a0000000-0000-4000-8000-%012d", i)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO companies (id, legal_name, nif) SELECT id::uuid, 'Empresa', 'N' || n FROM unnest($1::text[]) WITH ORDINALITY AS t(id, n)`, ids); err != nil {
		b.Fatal(err)
	}
	return ids
}

// insert commits a new client and returns when its commit returned.
func (r *latencyRig) insert(b *testing.B, id, company string) time.Time {
	if _, err := r.pool.Exec(context.Background(), `INSERT INTO customers (id, company_id, name) VALUES ($1, $2, 'Cliente')`, id, company); err != nil {
		b.Fatal(err)
	}
	return time.Now()
}

// wait is when the client's event of type typ arrived, waiting for it.
func (r *latencyRig) wait(b *testing.B, typ Type, id string) time.Time {
	var at time.Time
	waitSignalled(b, r.arrival, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		var ok bool
		if at, ok = r.arrived[string(typ)+" "+id]; !ok {
			return fmt.Errorf("no %s of %s", typ, id)
		}
		return nil
	})
	return at
}

// load commits rate new clients a second for d, and returns each one's
// latency to the receiver and, for one in ten, to its company's feed (read
// every 10 ms), in milliseconds.
func (r *latencyRig) load(b *testing.B, rate int, d time.Duration) (lat, feed []float64) {
	n := rate * int(d/time.Second)
	committed := make([]time.Time, n)
	ids := make([]string, n)
	var fmu sync.Mutex
	var polls sync.WaitGroup
	b.ResetTimer()
	func() {
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for i := range n {
			<-tick.C
			ids[i] = r.id(3, i)
			co := r.companies[i%len(r.companies)]
			committed[i] = r.insert(b, ids[i], co)
			if i%10 == 0 {
				polls.Go(func() {
					if at, ok := r.inFeed(co, ids[i]); ok {
						fmu.Lock()
						feed = append(feed, ms(at.Sub(committed[i])))
						fmu.Unlock()
					}
				})
			}
		}
	}()
	for i, id := range ids {
		lat = append(lat, ms(r.wait(b, ClientCreated, id).Sub(committed[i])))
	}
	polls.Wait()
	b.StopTimer()
	return lat, feed
}

// inFeed is when the client's event was first seen in its company's feed.
func (r *latencyRig) inFeed(company, id string) (time.Time, bool) {
	ctx := context.Background()
	for range 6000 { // a minute
		page, err := r.s.ReadFeed(ctx, invoicing.FeedQuery{CompanyID: company, Mode: invoicing.Test, Newest: true, Limit: 10})
		if err == nil && slices.ContainsFunc(page.Events, func(e json.RawMessage) bool { return bytes.Contains(e, []byte(id)) }) {
			return time.Now(), true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Time{}, false
}

// report reports the p50, p99 and max of lat (ms), named with prefix.
func report(b *testing.B, prefix string, lat []float64) {
	if len(lat) == 0 {
		b.Fatalf("no %slatencies", prefix)
	}
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], prefix+"p50-ms")
	b.ReportMetric(lat[len(lat)*99/100], prefix+"p99-ms")
	b.ReportMetric(lat[len(lat)-1], prefix+"max-ms")
}

// countingSource counts the detector's reads of the database and the rows
// they return: each read is one statement (a read that returns documents
// adds two, for their lines and their submissions).
type countingSource struct {
	Source
	reads, rows atomic.Int64
}

func (c *countingSource) InFlight(ctx context.Context) (invoicing.Horizon, error) {
	c.reads.Add(1)
	return c.Source.InFlight(ctx)
}

func (c *countingSource) DatabaseNow(ctx context.Context) (time.Time, error) {
	c.reads.Add(1)
	return c.Source.DatabaseNow(ctx)
}

func (c *countingSource) ChangedInvoices(ctx context.Context, q invoicing.ChangeQuery) ([]invoicing.Changed[invoicing.Invoice], error) {
	rows, err := c.Source.ChangedInvoices(ctx, q)
	c.reads.Add(1)
	c.rows.Add(int64(len(rows)))
	return rows, err
}

func (c *countingSource) ChangedClients(ctx context.Context, q invoicing.ChangeQuery) ([]invoicing.Changed[invoicing.Client], error) {
	rows, err := c.Source.ChangedClients(ctx, q)
	c.reads.Add(1)
	c.rows.Add(int64(len(rows)))
	return rows, err
}

func (c *countingSource) ChangedTransmissions(ctx context.Context, q invoicing.ChangeQuery) ([]invoicing.Changed[invoicing.Invoice], error) {
	rows, err := c.Source.ChangedTransmissions(ctx, q)
	c.reads.Add(1)
	c.rows.Add(int64(len(rows)))
	return rows, err
}

func (c *countingSource) OverdueInvoices(ctx context.Context, q invoicing.OverdueQuery) ([]invoicing.Changed[invoicing.Invoice], error) {
	rows, err := c.Source.OverdueInvoices(ctx, q)
	c.reads.Add(1)
	c.rows.Add(int64(len(rows)))
	return rows, err
}

// costs is what detection asked of the database a second: reads and the
// rows they returned.
type costs struct{ reads, rows float64 }

// dbCost counts detection's reads over window, from after to after now;
// the answer waits for the window's end.
func (r *latencyRig) dbCost(after, window time.Duration) func() costs {
	done := make(chan costs, 1)
	go func() {
		time.Sleep(after)
		r0, w0, start := r.src.reads.Load(), r.src.rows.Load(), time.Now()
		time.Sleep(window)
		secs := time.Since(start).Seconds()
		done <- costs{reads: float64(r.src.reads.Load()-r0) / secs, rows: float64(r.src.rows.Load()-w0) / secs}
	}()
	return func() costs { return <-done }
}
