package events

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// benchEnv is a Redis prefix, a fast local receiver counting deliveries by
// event id, and a Service configured for it (no database: events are
// queued directly, as the detector queues them).
type benchEnv struct {
	cfg      Config
	s        *Service
	srv      *httptest.Server
	mu       sync.Mutex
	byID     map[string]int
	received atomic.Int64
	arrived  map[string]time.Time
	arrival  chan struct{} // signalled after each delivery is counted
}

func newBenchEnv(b *testing.B) *benchEnv {
	rdb, prefix := testenv.Redis(b)
	be := &benchEnv{byID: map[string]int{}, arrived: map[string]time.Time{}, arrival: make(chan struct{}, 1)}
	be.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("webhook-id")
		be.mu.Lock()
		be.byID[id]++
		be.arrived[id] = time.Now()
		be.mu.Unlock()
		be.received.Add(1)
		signal(be.arrival)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(be.srv.Close)
	be.cfg = Config{Redis: rdb, Prefix: prefix, AllowHTTP: true, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Tick: 50 * time.Millisecond, Concurrency: 64, PerEndpoint: 32}
	s, err := New(be.cfg)
	if err != nil {
		b.Fatal(err)
	}
	be.s = s
	return be
}

// endpoints makes one TEST endpoint for each of n companies.
func (be *benchEnv) endpoints(b *testing.B, n int) []Webhook {
	eps := make([]Webhook, n)
	for i := range eps {
		var err error
		eps[i], _, err = be.s.CreateWebhook(context.Background(), NewWebhook{CompanyID: fmt.Sprintf("a0000000-0000-4000-8000-%012d", i),
			Mode: invoicing.Test, URL: be.srv.URL + "/hook"})
		if err != nil {
			b.Fatal(err)
		}
	}
	return eps
}

// queue queues n client.created events for ep, in pages as the detector does.
func (be *benchEnv) queue(b *testing.B, ep Webhook, n int, tag string) []string {
	ids := make([]string, 0, n)
	for start := 0; start < n; start += pageSize {
		var page []queued
		for i := start; i < min(n, start+pageSize); i++ {
			res := fmt.Sprintf("%s-%d", tag, i)
			ev := Event{ID: eventID(invoicing.Test, ep.CompanyID, ClientCreated, res, ""), Type: ClientCreated, Mode: invoicing.Test,
				CompanyID: ep.CompanyID, ResourceID: res, Time: time.Now(), Data: []byte(`{"id":"` + res + `","name":"Cliente"}`)}
			page = append(page, queued{ev: ev, eps: []string{ep.ID}})
			ids = append(ids, ev.ID)
		}
		if _, _, err := be.s.q.enqueue(context.Background(), nil, move{}, page); err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

func (be *benchEnv) waitReceived(b *testing.B, n int64) {
	waitSignalled(b, be.arrival, func() error {
		if got := be.received.Load(); got < n {
			return fmt.Errorf("received %d of %d", got, n)
		}
		return nil
	})
}

// signal wakes, without blocking, whoever waits on c (of capacity 1).
func signal(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// waitSignalled checks cond each time c is signalled until it holds, for
// 10 minutes at most: a benchmark's backlog is large.
func waitSignalled(b *testing.B, c <-chan struct{}, cond func() error) {
	b.Helper()
	deadline := time.After(10 * time.Minute)
	for {
		err := cond()
		if err == nil {
			return
		}
		select {
		case <-c:
		case <-deadline:
			b.Fatalf("after 10 minutes: %v", err)
		}
	}
}

func (be *benchEnv) run(b *testing.B, instances int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range instances {
		s, err := New(be.cfg)
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { s.Run(ctx) })
	}
	return func() { cancel(); wg.Wait() }
}

// One instance delivering a backlog to a fast local receiver: the
// events/s metric is the target's (at least 1,000).
func BenchmarkDeliveryOneInstance(b *testing.B) {
	be := newBenchEnv(b)
	eps := be.endpoints(b, 10)
	per := max(b.N/len(eps), 1)
	for i, ep := range eps {
		be.queue(b, ep, per, fmt.Sprint("b", i))
	}
	b.ResetTimer()
	start := time.Now()
	stop := be.run(b, 1)
	be.waitReceived(b, int64(per*len(eps)))
	elapsed := time.Since(start)
	stop()
	b.ReportMetric(float64(per*len(eps))/elapsed.Seconds(), "events/s")
}

// Three instances draining one backlog: every event once (the dups metric
// must be 0), and their throughput together.
func BenchmarkBacklogThreeInstances(b *testing.B) {
	be := newBenchEnv(b)
	eps := be.endpoints(b, 10)
	per := max(b.N/len(eps), 1)
	for i, ep := range eps {
		be.queue(b, ep, per, fmt.Sprint("b", i))
	}
	total := int64(per * len(eps))
	b.ResetTimer()
	start := time.Now()
	stop := be.run(b, 3)
	be.waitReceived(b, total)
	elapsed := time.Since(start)
	stop() // waits for the deliveries under way: a duplicate in flight lands now
	dups := 0
	be.mu.Lock()
	for _, n := range be.byID {
		dups += n - 1
	}
	be.mu.Unlock()
	b.ReportMetric(float64(total)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(dups), "dups")
	if dups > 0 {
		b.Errorf("%d events sent twice", dups)
	}
}

// A company with a huge backlog (its 100,000 invoices turned overdue)
// does not hold up another company's event: the other-ms metric is the
// other company's wait from queueing to arrival.
func BenchmarkFairnessUnderBacklog(b *testing.B) {
	be := newBenchEnv(b)
	eps := be.endpoints(b, 2)
	backlog := max(b.N, 1000)
	be.queue(b, eps[0], backlog, "big")
	stop := be.run(b, 1)
	defer stop()
	be.waitReceived(b, int64(backlog/10)) // the backlog is under way
	b.ResetTimer()
	queued := time.Now()
	id := be.queue(b, eps[1], 1, "small")[0]
	var at time.Time
	waitSignalled(b, be.arrival, func() error {
		be.mu.Lock()
		defer be.mu.Unlock()
		var ok bool
		if at, ok = be.arrived[id]; !ok {
			return fmt.Errorf("the other company's event has not arrived")
		}
		return nil
	})
	b.ReportMetric(float64(at.Sub(queued).Microseconds())/1000, "other-ms")
	b.ReportMetric(float64(be.received.Load()), "backlog-delivered")
}

func decodeJSON(r *http.Request, v any) error { return json.NewDecoder(r.Body).Decode(v) }
