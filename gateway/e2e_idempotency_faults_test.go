package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Creates with idempotency keys while PostgreSQL is cut and restored and
// Redis is killed and restarted (losing the records written since its last
// save), each create retried by its client until it gets a final answer:
// afterwards every acknowledged client exists exactly once and no create made
// a second row (rows are counted in the database, not answers).
func TestIdempotentCreatesUnderFaults(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	proxy := testenv.PostgresProxy(t)
	srv := testenv.StartRedisServer(t, 0)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	in := w.start(withRedis(rdb), viaProxy(proxy, time.Second, 2, 300*time.Millisecond))
	k := in.key(t, coA, invoicing.Live, allScopes)
	if err := rdb.Save(context.Background()).Err(); err != nil { // the key survives restarts
		t.Fatal(err)
	}

	// The creates are spread over the first 12 faults (3 of each kind): each
	// batch starts while its fault is on, whatever the machine's speed.
	const creates, workers, batches = 48, 6, 12
	var ph faultPhases
	ph.changed = make(chan struct{})
	results := make([]createOutcome, creates)
	var next atomic.Int64
	var unexpected sync.Map // status -> example
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < creates; i = int(next.Add(1)) - 1 {
				ph.waitFaults(int64(i*batches/creates) + 1)
				body := fmt.Sprintf(`{"name":"Falha %d"}`, i)
				if i%2 == 1 {
					body = fmt.Sprintf(`{"name":"Falha %d","nif":"54009%05d"}`, i, i)
				}
				results[i] = retryCreate(in.pub.URL+clientsPath, k.Key, fmt.Sprintf("fault-%d", i), body, &unexpected, ph.next)
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()

	// The faults, in turn, until every create has its final answer. Held
	// replies outlast the 1 s query timeout: the database commits a create
	// whose answer the gateway never gets.
	faults := cycleFaults(&ph, done, []fault{
		{proxy.Cut, proxy.Resume, 300 * time.Millisecond},
		{proxy.HoldReplies, proxy.Resume, 1300 * time.Millisecond},
		{proxy.Pause, proxy.Resume, 300 * time.Millisecond},
		{srv.Kill, srv.Restart, 300 * time.Millisecond},
	})
	unexpected.Range(func(k, v any) bool {
		t.Errorf("answer %v during the faults: %v", k, v)
		return true
	})
	attempts := checkCreatedOnce(t, w.live, results)
	t.Logf("%d creates, %d attempts, %d faults", creates, attempts, faults)
	if faults < batches {
		t.Fatalf("only %d faults: the creates did not span them", faults)
	}
}

// createOutcome is one create's final answer.
type createOutcome struct {
	status   int
	id       string
	attempts int
}

// fault is one kind of fault: on, off, and how long it lasts.
type fault struct {
	on, off func()
	hold    time.Duration
}

// faultPhases tells the clients how the faults go: how many have started,
// and each change (a fault on or off), which is when a client retries.
type faultPhases struct {
	mu      sync.Mutex
	started int64
	changed chan struct{} // closed and replaced on every change
}

func (p *faultPhases) change(faultOn bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if faultOn {
		p.started++
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// next is closed at the next change.
func (p *faultPhases) next() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// waitFaults waits until n faults have started.
func (p *faultPhases) waitFaults(n int64) {
	for {
		p.mu.Lock()
		started, ch := p.started, p.changed
		p.mu.Unlock()
		if started >= n {
			return
		}
		<-ch
	}
}

// cycleFaults turns the kinds of faults on and off in turn until done is
// closed, and returns how many it made.
func cycleFaults(ph *faultPhases, done <-chan struct{}, kinds []fault) int {
	faults := 0
	for stop := false; !stop; faults++ {
		f := kinds[faults%len(kinds)]
		f.on()
		ph.change(true)
		select {
		case <-done:
			stop = true
		case <-time.After(f.hold):
		}
		f.off()
		ph.change(false)
		select {
		case <-done:
			stop = true
		case <-time.After(200 * time.Millisecond):
		}
	}
	return faults
}

// checkCreatedOnce asserts that each create was answered 201 and that its
// client exists exactly once, in the database at dbURL; it returns the
// attempts made in all.
func checkCreatedOnce(t *testing.T, dbURL string, results []createOutcome) (attempts int) {
	t.Helper()
	direct, err := backend.Open(context.Background(), backend.Config{URL: dbURL})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	for i, r := range results {
		attempts += r.attempts
		if r.status != 201 {
			t.Errorf("create %d: final answer %d after %d attempts, want 201", i, r.status, r.attempts)
			continue
		}
		name := fmt.Sprintf("Falha %d", i)
		p, err := direct.ListClients(context.Background(), coA, invoicing.ClientFilter{Search: name, Page: 1, PageSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range p.Data {
			if c.Name == name {
				ids = append(ids, c.ID)
			}
		}
		if len(ids) != 1 || ids[0] != r.id {
			t.Errorf("create %d acknowledged as %s: rows %v, want exactly that one", i, r.id, ids)
		}
	}
	return attempts
}

// retryCreate sends one create with its idempotency key until the answer is
// final, as a careful client would: after an answer lost or refused for
// now, it retries when the faults next change (a fault lifted, or the next
// one on), however long that takes, instead of after a fixed wait.
func retryCreate(url, key, idemKey, body string, unexpected *sync.Map, changed func() <-chan struct{}) (o createOutcome) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		o.attempts++
		next := changed()
		r, err := http.NewRequest("POST", url, strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		r.Header.Set("Authorization", "Bearer "+key)
		r.Header.Set("X-Company-Id", coA)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", idemKey)
		res, err := faultClient.Do(r)
		if err != nil {
			<-next // the answer was lost: retry
			continue
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		switch res.StatusCode {
		case 201:
			var c struct{ ID string }
			_ = json.Unmarshal(b, &c)
			o.status, o.id = 201, c.ID
			return o
		case 409, 503, 429:
			var p struct{ Code string }
			_ = json.Unmarshal(b, &p)
			if res.StatusCode == 409 && p.Code != "idempotency_in_progress" {
				unexpected.Store(fmt.Sprintf("%d %s", res.StatusCode, p.Code), string(b))
				o.status = res.StatusCode
				return o
			}
			<-next // Retry-After is 1 s; the next change of the faults comes sooner
		default:
			unexpected.Store(res.StatusCode, string(b))
			o.status = res.StatusCode
			return o
		}
	}
	return o
}
