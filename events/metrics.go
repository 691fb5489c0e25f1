package events

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/invoicing-ao/gateway/invoicing"
)

// metrics are this instance's counts of the events' work, by mode and event
// type, never by company or endpoint (thousands: a label of either would
// grow every series without bound; the delivery log has them). Every series
// exists from the start, at zero, so that a rate over the first increment is
// not lost. They are counted whether or not Config.Metrics registers them.
type metrics struct {
	detected [2][]prometheus.Counter // [mode][type]: new events
	enqueued [2][]prometheus.Counter // [mode][type]: deliveries queued
	// attempts is [mode][type][first, retry][outcome].
	attempts    [2][][2][len(outcomeNames)]prometheus.Counter
	expired     [2]prometheus.Counter
	failures    [2][len(reasonNames)]prometheus.Counter
	latency     [2]prometheus.Observer // the event's time to 2xx
	toQueue     [2]prometheus.Observer // commit to queued (and in the feed)
	toDelivery  [2]prometheus.Observer // commit to a first attempt that succeeded
	duration    [2]prometheus.Observer // one attempt's exchange
	detectErrs  [2][len(loopNames)]prometheus.Counter
	leader      [2]prometheus.Gauge
	oldest      [2]prometheus.Gauge // the oldest transaction followed
	inFlight    prometheus.Gauge
	maxInFlight prometheus.Gauge
	collectors  []prometheus.Collector
}

// Label values.
var (
	attemptNames = [2]string{"first", "retry"}
	// An attempt's outcome: delivered (a 2xx), retried (failed, another
	// attempt is scheduled), failed (failed, the schedule is spent: the
	// delivery is given up).
	outcomeNames = [3]string{"delivered", "retried", "failed"}
	// Why an attempt failed: status (the receiver answered, not 2xx),
	// timeout (no answer within the timeout), network (no connection: DNS,
	// refused, reset, TLS), destination (an address the destination policy
	// refuses), internal (the delivery could not be made: no secret, an
	// unusable URL).
	reasonNames = [5]string{"status", "timeout", "network", "destination", "internal"}
	loopNames   = [3]string{"changes", "overdue", "sweep"}
)

const (
	outcomeDelivered = iota
	outcomeRetried
	outcomeFailed
)

const (
	reasonStatus = iota
	reasonTimeout
	reasonNetwork
	reasonDestination
	reasonInternal
)

// metricTypes are the type label's values: the event types, then the test
// deliveries' (queued and attempted, never detected).
var metricTypes = append(slices.Clone(Types), TestType)

// typeIndex places each of metricTypes in metrics' tables.
var typeIndex = func() map[Type]int {
	m := make(map[Type]int, len(metricTypes))
	for i, t := range metricTypes {
		m[t] = i
	}
	return m
}()

func newMetrics(concurrency int) *metrics {
	modes := []string{"mode"}
	detected := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_events_detected_total",
		Help: "Events found by the detector for the first time (a change someone subscribes to), by mode and type.",
	}, []string{"mode", "type"})
	enqueued := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_events_enqueued_total",
		Help: "Deliveries queued (one per event and subscribed endpoint; test deliveries as type webhook.test), by mode and type.",
	}, []string{"mode", "type"})
	attempts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_events_delivery_attempts_total",
		Help: "Delivery attempts made by this instance, by mode, type, attempt (first, retry) and outcome (delivered: 2xx; retried: failed, retry scheduled; failed: failed, schedule spent).",
	}, []string{"mode", "type", "attempt", "outcome"})
	expired := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_events_deliveries_expired_total",
		Help: "Deliveries dropped unattempted: their event was past the retention when their turn came, by mode.",
	}, modes)
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_events_delivery_failures_total",
		Help: "Failed delivery attempts by mode and reason (status: answered, not 2xx; timeout; network; destination: address refused by policy; internal).",
	}, []string{"mode", "reason"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gateway_events_delivery_latency_seconds",
		Help: "From the change (the event's time) to the receiver's 2xx, by mode; retries included.",
		// Detection reads Settle (5 s) behind the database's clock; retries
		// wait 5 s, 5 min, 30 min, 2 h... up to three days.
		Buckets: []float64{1, 2.5, 5, 7.5, 10, 15, 30, 60, 120, 300, 900, 1800, 3600, 7200, 21600, 86400, 259200},
	}, modes)
	// From the commit's proxy (docs/observability.md: the earliest detection
	// knows the change can have committed): under a second is the objective.
	commitBuckets := []float64{.025, .05, .1, .15, .2, .3, .5, .75, 1, 1.5, 2.5, 5, 10, 30, 60, 300, 900}
	toQueue := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gateway_events_commit_to_queue_seconds",
		Help:    "From a change's commit (the earliest detection knows it can have committed) to its event queued and in the feed, by mode; events new to an endpoint.",
		Buckets: commitBuckets,
	}, modes)
	toDelivery := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gateway_events_commit_to_delivery_seconds",
		Help:    "From a change's commit (the earliest detection knows it can have committed) to the first delivery attempt, when it succeeded (the answer's wait excluded), by mode.",
		Buckets: commitBuckets,
	}, modes)
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gateway_events_attempt_duration_seconds",
		Help:    "One delivery attempt: request sent to answer read (or failure), by mode.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15},
	}, modes)
	detectErrs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_events_detection_errors_total",
		Help: "Detection steps that failed (and are retried next tick), by mode and loop (changes, overdue, sweep).",
	}, []string{"mode", "loop"})
	leader := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gateway_events_detector_leader",
		Help: "1 while this instance leads the mode's detection, else 0.",
	}, modes)
	oldest := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gateway_events_oldest_transaction_seconds",
		Help: "How long the oldest transaction that detection follows has been open (it holds the watermarks back: a restart reads again from its start), by mode, on the leading instance; 0 when none.",
	}, modes)
	inFlight := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gateway_events_deliveries_in_flight",
		Help: "Deliveries this instance is making now.",
	})
	maxInFlight := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gateway_events_deliveries_max_in_flight",
		Help: "How many deliveries this instance makes at once at most (Concurrency).",
	})
	maxInFlight.Set(float64(concurrency))

	m := &metrics{inFlight: inFlight, maxInFlight: maxInFlight,
		collectors: []prometheus.Collector{detected, enqueued, attempts, expired, failures, latency, toQueue, toDelivery, duration, detectErrs, leader, oldest, inFlight, maxInFlight}}
	m.bind(metricVecs{detected, enqueued, attempts, expired, failures, detectErrs, latency, toQueue, toDelivery, duration, leader, oldest})
	return m
}

// metricVecs are the labelled metrics, bound to their series by bind.
type metricVecs struct {
	detected, enqueued, attempts, expired, failures, detectErrs *prometheus.CounterVec
	latency, toQueue, toDelivery, duration                      *prometheus.HistogramVec
	leader, oldest                                              *prometheus.GaugeVec
}

// bind takes each series of v the instance counts in, by mode, once: the
// hot paths index arrays instead of looking labels up.
func (m *metrics) bind(v metricVecs) {
	for mi, mode := range invoicing.Modes {
		md := string(mode)
		m.detected[mi] = make([]prometheus.Counter, len(Types))
		m.enqueued[mi] = make([]prometheus.Counter, len(metricTypes))
		m.attempts[mi] = make([][2][len(outcomeNames)]prometheus.Counter, len(metricTypes))
		for ti, t := range metricTypes {
			if ti < len(Types) {
				m.detected[mi][ti] = v.detected.WithLabelValues(md, string(t))
			}
			m.enqueued[mi][ti] = v.enqueued.WithLabelValues(md, string(t))
			for ai, a := range attemptNames {
				for oi, o := range outcomeNames {
					m.attempts[mi][ti][ai][oi] = v.attempts.WithLabelValues(md, string(t), a, o)
				}
			}
		}
		m.expired[mi] = v.expired.WithLabelValues(md)
		for ri, r := range reasonNames {
			m.failures[mi][ri] = v.failures.WithLabelValues(md, r)
		}
		m.latency[mi] = v.latency.WithLabelValues(md)
		m.toQueue[mi] = v.toQueue.WithLabelValues(md)
		m.toDelivery[mi] = v.toDelivery.WithLabelValues(md)
		m.duration[mi] = v.duration.WithLabelValues(md)
		for li, l := range loopNames {
			m.detectErrs[mi][li] = v.detectErrs.WithLabelValues(md, l)
		}
		m.leader[mi] = v.leader.WithLabelValues(md)
		m.oldest[mi] = v.oldest.WithLabelValues(md)
	}
}

// register registers the metrics and sc on reg.
func (m *metrics) register(reg prometheus.Registerer, sc prometheus.Collector) error {
	for _, c := range append(m.collectors, sc) {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// indexes finds a mode's and a type's places; ok is false for a value that
// is neither (none is made: the tables hold every one).
func indexes(mode invoicing.Mode, t Type) (mi, ti int, ok bool) {
	ti, ok = typeIndex[t]
	if !ok || !mode.Valid() {
		return 0, 0, false
	}
	return mode.Index(), ti, true
}

// queuedEvent counts an event enqueue found new (n deliveries queued, at
// now), or nothing when n < 0: the event was queued before. A test delivery
// is queued, not detected.
func (m *metrics) queuedEvent(ev *Event, n int64, now time.Time) {
	mi, ti, ok := indexes(ev.Mode, ev.Type)
	if !ok || n < 0 {
		return
	}
	if ti < len(Types) {
		m.detected[mi][ti].Inc()
	}
	m.enqueued[mi][ti].Add(float64(n))
	if !ev.commit.IsZero() {
		m.toQueue[mi].Observe(max(0, now.Sub(ev.commit).Seconds()))
	}
}

// attempted counts an attempt at delivering ev: its outcome, its reason
// when it failed, its duration and, on success, the latency from the
// change and, for a first attempt, from its commit to the attempt.
func (m *metrics) attempted(ev *Event, a *Attempt, attempt, outcome int, now time.Time) {
	mi, ti, ok := indexes(ev.Mode, ev.Type)
	if !ok {
		return
	}
	m.attempts[mi][ti][min(attempt, 1)][outcome].Inc()
	m.duration[mi].Observe(a.Latency / 1000)
	if outcome == outcomeDelivered {
		m.latency[mi].Observe(max(0, now.Sub(ev.Time).Seconds()))
		if attempt == 0 && !ev.commit.IsZero() {
			m.toDelivery[mi].Observe(max(0, a.At.Sub(ev.commit).Seconds()))
		}
		return
	}
	m.failures[mi][a.reason].Inc()
}

func (m *metrics) expiredDelivery(mode invoicing.Mode) {
	if mode.Valid() {
		m.expired[mode.Index()].Inc()
	}
}

// detectionFailed counts a failed step of a detection loop.
func (m *metrics) detectionFailed(mode invoicing.Mode, loop string) {
	for li, l := range loopNames {
		if l == loop && mode.Valid() {
			m.detectErrs[mode.Index()][li].Inc()
		}
	}
}

func (m *metrics) leads(mode invoicing.Mode, lead bool) {
	if !mode.Valid() {
		return
	}
	v := 0.0
	if lead {
		v = 1
	}
	m.leader[mode.Index()].Set(v)
}

// oldestOpen sets how long the oldest transaction followed (start; zero for
// none) has been open at the database's clock now.
func (m *metrics) oldestOpen(mode invoicing.Mode, start, now time.Time) {
	if !mode.Valid() {
		return
	}
	v := 0.0
	if !start.IsZero() {
		v = max(0, now.Sub(start).Seconds())
	}
	m.oldest[mode.Index()].Set(v)
}
