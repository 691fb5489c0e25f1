package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// gathered reads reg's series as `name{label="value",...}` (labels sorted)
// → value; a histogram gives its count, under name_count.
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			slices.Sort(ls)
			labels := "{" + strings.Join(ls, ",") + "}"
			switch {
			case m.Counter != nil:
				out[mf.GetName()+labels] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[mf.GetName()+labels] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[mf.GetName()+"_count"+labels] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

// flaky is a real HTTP receiver that answers 500 to the first attempt at
// each event, and to every attempt at an event about a client whose name
// starts with "Falha"; 200 otherwise. It counts the requests it got.
type flaky struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen map[string]int // attempts by webhook-id
	got  []delivery
}

func newFlaky(t *testing.T) *flaky {
	f := &flaky{seen: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := delivery{header: r.Header.Clone(), body: body}
		_ = json.Unmarshal(body, &d.parsed)
		var data struct{ ID, Name string }
		_ = json.Unmarshal(d.parsed.Data, &data)
		d.id = data.ID
		f.mu.Lock()
		id := r.Header.Get("webhook-id")
		f.seen[id]++
		n := f.seen[id]
		f.got = append(f.got, d)
		f.mu.Unlock()
		if n == 1 || strings.HasPrefix(data.Name, "Falha") {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *flaky) requests() []delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

// waitMetrics polls reg until every wanted series has its value, and
// returns what it read last.
func waitMetrics(t *testing.T, reg *prometheus.Registry, want map[string]float64) map[string]float64 {
	t.Helper()
	var got map[string]float64
	testenv.Eventually(t, "the metrics' values", func() error {
		got = gathered(t, reg)
		var wrong []string
		for k, v := range want {
			if got[k] != v {
				wrong = append(wrong, fmt.Sprintf("%s = %v, want %v", k, got[k], v))
			}
		}
		if len(wrong) > 0 {
			slices.Sort(wrong)
			return errors.New("\n" + strings.Join(wrong, "\n"))
		}
		return nil
	})
	return got
}

// waitPresent waits for every series of keys to exist, and returns what
// the registry then holds.
func waitPresent(t *testing.T, reg *prometheus.Registry, keys []string) map[string]float64 {
	t.Helper()
	var got map[string]float64
	testenv.Eventually(t, "the metrics' series", func() error {
		got = gathered(t, reg)
		var missing []string
		for _, k := range keys {
			if _, ok := got[k]; !ok {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			return errors.New("missing:\n" + strings.Join(missing, "\n"))
		}
		return nil
	})
	return got
}

// Real changes, detected and delivered to a real receiver that fails some
// attempts, move the counters by exactly what happened: each event
// detected once, one delivery queued for each, first attempts retried,
// a retry delivered and a retry given up, the failures' reason, the
// latency of the one success.
func TestMetricsCountRealDeliveries(t *testing.T) {
	t.Parallel()
	redises(t, testMetricsCountRealDeliveries)
}

func testMetricsCountRealDeliveries(t *testing.T, rdb *redis.Client, prefix string) {
	e := newEnvOn(t, rdb, prefix)
	recv := newFlaky(t)
	reg := prometheus.NewRegistry()
	cfg := e.config()
	cfg.Metrics, cfg.Schedule = reg, []time.Duration{50 * time.Millisecond}
	s := e.service(cfg)
	s.statsKeep = 0 // each scrape reads Redis
	if _, _, err := s.CreateWebhook(context.Background(), NewWebhook{CompanyID: e.company, Mode: invoicing.Test, URL: recv.srv.URL + "/hook?token=t",
		Types: []string{string(ClientCreated)}}); err != nil {
		t.Fatal(err)
	}
	before := gathered(t, reg)
	// Every series exists before anything happened, at zero.
	for _, k := range []string{
		`gateway_events_detected_total{mode="LIVE",type="invoice.paid"}`,
		`gateway_events_delivery_attempts_total{attempt="retry",mode="TEST",outcome="failed",type="client.updated"}`,
		`gateway_events_delivery_failures_total{mode="TEST",reason="timeout"}`,
		`gateway_events_delivery_latency_seconds_count{mode="LIVE"}`,
		`gateway_events_commit_to_queue_seconds_count{mode="TEST"}`,
		`gateway_events_commit_to_delivery_seconds_count{mode="LIVE"}`,
		`gateway_events_deliveries_in_flight{}`,
	} {
		if v, ok := before[k]; !ok || v != 0 {
			t.Errorf("%s before any work: %v (exists: %v), want 0", k, v, ok)
		}
	}
	if before[`gateway_events_deliveries_max_in_flight{}`] != 64 {
		t.Errorf("max in flight %v, want the default concurrency 64", before[`gateway_events_deliveries_max_in_flight{}`])
	}
	e.run(s)
	e.insertClient(cli1, "Cliente Um")
	e.insertClient("11000000-0000-4000-8000-000000000002", "Falha Dois")

	const cc = `type="client.created"`
	got := waitMetrics(t, reg, map[string]float64{
		`gateway_events_detected_total{mode="TEST",` + cc + `}`:                                              2,
		`gateway_events_enqueued_total{mode="TEST",` + cc + `}`:                                              2,
		`gateway_events_delivery_attempts_total{attempt="first",mode="TEST",outcome="retried",` + cc + `}`:   2,
		`gateway_events_delivery_attempts_total{attempt="retry",mode="TEST",outcome="delivered",` + cc + `}`: 1,
		`gateway_events_delivery_attempts_total{attempt="retry",mode="TEST",outcome="failed",` + cc + `}`:    1,
		`gateway_events_delivery_failures_total{mode="TEST",reason="status"}`:                                3,
		`gateway_events_delivery_latency_seconds_count{mode="TEST"}`:                                         1,
		`gateway_events_commit_to_queue_seconds_count{mode="TEST"}`:                                          2,
		`gateway_events_commit_to_delivery_seconds_count{mode="TEST"}`:                                       0, // first attempts only
		`gateway_events_attempt_duration_seconds_count{mode="TEST"}`:                                         4,
		`gateway_events_deliveries_in_flight{}`:                                                              0,
		`gateway_events_detector_leader{mode="TEST"}`:                                                        1,
		`gateway_events_backlog{mode="TEST",state="due"}`:                                                    0,
		`gateway_events_backlog{mode="TEST",state="in_flight"}`:                                              0,
		`gateway_events_backlog{mode="TEST",state="scheduled"}`:                                              0,
	})
	if n := len(recv.requests()); n != 4 {
		t.Errorf("the receiver got %d requests, the metrics count 4 attempts", n)
	}
	var total float64
	for k, v := range got {
		if strings.HasPrefix(k, "gateway_events_delivery_attempts_total{") {
			total += v
		}
		if strings.HasPrefix(k, "gateway_events_detection_errors_total{") && v != 0 {
			t.Errorf("%s = %v", k, v)
		}
	}
	if total != 4 {
		t.Errorf("%v attempts counted in all, want 4", total)
	}
	// Each stream sets its lag after its own first step, which may come
	// after the deliveries above settled: wait for every stream's.
	lags := make([]string, len(markStreams))
	for i, stream := range markStreams {
		lags[i] = `gateway_events_detector_lag_seconds{mode="TEST",stream="` + stream + `"}`
	}
	got = waitPresent(t, reg, lags)
	for _, k := range lags {
		if v := got[k]; v < 0 {
			t.Errorf("%s = %v, want a lag of 0 or more", k, v)
		}
	}
	if _, ok := got[`gateway_events_detector_lag_seconds{mode="LIVE",stream="clients"}`]; ok {
		t.Error("a lag for LIVE, which has no source and so no watermark")
	}
}

// A test delivery is queued and attempted under its own type, and is no
// detected event.
func TestMetricsOfTestDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	cfg := e.config()
	cfg.Metrics, cfg.Sources = reg, nil
	s := e.service(cfg)
	ep, _ := e.endpoint(s, string(ClientCreated))
	e.run(s)
	if _, err := s.TestWebhook(context.Background(), ep.ID); err != nil {
		t.Fatal(err)
	}
	got := waitMetrics(t, reg, map[string]float64{
		`gateway_events_enqueued_total{mode="TEST",type="webhook.test"}`:                                              1,
		`gateway_events_delivery_attempts_total{attempt="first",mode="TEST",outcome="delivered",type="webhook.test"}`: 1,
	})
	for k, v := range got {
		if strings.HasPrefix(k, "gateway_events_detected_total{") && (v != 0 || strings.Contains(k, "webhook.test")) {
			t.Errorf("%s = %v: a test delivery is not a detected event", k, v)
		}
	}
	if n := len(e.recv.deliveries()); n != 1 {
		t.Errorf("the receiver got %d deliveries, the metrics count 1", n)
	}
}

// sampleSum is the sum of a histogram's samples in reg.
func sampleSum(t *testing.T, reg *prometheus.Registry, name string, mode invoicing.Mode) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			if mf.GetName() == name && len(m.Label) == 1 && m.Label[0].GetValue() == string(mode) {
				return m.Histogram.GetSampleSum()
			}
		}
	}
	t.Fatalf("no %s for %s", name, mode)
	return 0
}

// The latencies from a change's commit are measured from no later than
// the commit: never more than the time since before the change was
// written, never less than nothing.
func TestCommitLatencyMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	cfg := e.config()
	cfg.Metrics = reg
	s := e.service(cfg)
	e.endpoint(s, string(ClientCreated))
	e.run(s)
	names := []string{"gateway_events_commit_to_queue_seconds", "gateway_events_commit_to_delivery_seconds"}
	counts := func(n float64) map[string]float64 {
		out := map[string]float64{}
		for _, name := range names {
			out[name+`_count{mode="TEST"}`] = n
		}
		return out
	}
	e.insertClient(cliLate, "Antes")
	waitMetrics(t, reg, counts(1))
	first := map[string]float64{}
	for _, name := range names {
		first[name] = sampleSum(t, reg, name, invoicing.Test)
	}
	before := time.Now()
	e.insertClient(cli1, "Cliente Um")
	waitMetrics(t, reg, counts(2))
	elapsed := time.Since(before).Seconds()
	for _, name := range names {
		if second := sampleSum(t, reg, name, invoicing.Test) - first[name]; second < 0 || second > elapsed {
			t.Errorf("%s: %v s for the second change, outside [0, %v] (the time since before it was written)", name, second, elapsed)
		}
	}
}
