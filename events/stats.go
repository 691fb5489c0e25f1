package events

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// modeStats is the shared state of one mode's events.
type modeStats struct {
	Healthy, Failing, Disabled int64    // endpoints
	Due, Scheduled, InFlight   int64    // deliveries of enabled endpoints
	OldestDue                  int64    // ms; the due time of the oldest due delivery of a healthy endpoint, -1 for none
	Marks                      []string // by markStreams; "" when none
	// Ahead is, by streams, how far the leader's read went while an open
	// transaction held the watermark back ("" when none: horizon.go).
	Ahead []string `json:",omitempty"`
}

// markStreams are the watermarks the metrics report: the change streams',
// then the overdue loop's.
var markStreams = func() []string {
	var out []string
	for _, st := range streams {
		out = append(out, st.name)
	}
	return append(out, "overdue")
}()

// keptStats is a reading of the shared state, as kept in Redis.
type keptStats struct {
	At    int64                           `json:"at"` // when it was read (ms)
	Modes [len(invoicing.Modes)]modeStats `json:"modes"`
}

// stats reads the modes' shared state for the metrics. A reading costs a
// few Redis commands per endpoint (in three pipelined round trips, so that
// Redis serves others in between, where one script would hold it), so it is
// kept in Redis, and every instance's scrapes within statsKeep of it share
// it. Its age is judged by the time it holds, not by a TTL: the demo's
// in-process Redis expires nothing by itself.
func (s *Service) stats(ctx context.Context) ([len(invoicing.Modes)]modeStats, error) {
	now := s.now().UnixMilli()
	keep := s.statsKeep.Milliseconds()
	if keep > 0 {
		var kept keptStats
		raw, err := s.rdb.Get(ctx, s.l.stats()).Bytes()
		if err == nil && json.Unmarshal(raw, &kept) == nil && now-kept.At < keep && kept.At-now < keep {
			return kept.Modes, nil
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return kept.Modes, unavailable(err)
		}
	}
	out, err := s.readStats(ctx, now)
	if err != nil {
		return out, err
	}
	if keep > 0 {
		raw, _ := json.Marshal(keptStats{At: now, Modes: out})
		_ = s.rdb.Set(ctx, s.l.stats(), raw, 2*s.statsKeep).Err() // not kept: the next scrape reads again
	}
	return out, nil
}

// readStats reads the endpoints of each mode and their states, the queues
// of those with work (the ready set's) as they are at now (ms), and the
// watermarks.
func (s *Service) readStats(ctx context.Context, now int64) ([len(invoicing.Modes)]modeStats, error) {
	var out [len(invoicing.Modes)]modeStats
	// The companies with endpoints, the endpoints with work, the watermarks.
	pipe := s.rdb.Pipeline()
	var cos [len(invoicing.Modes)]*redis.StringSliceCmd
	marks := make([][]*redis.StringCmd, len(invoicing.Modes))
	ahead := make([][]*redis.StringCmd, len(invoicing.Modes))
	for mi, m := range invoicing.Modes {
		cos[mi] = pipe.SMembers(ctx, s.l.companies(m))
		for _, name := range markStreams {
			marks[mi] = append(marks[mi], pipe.Get(ctx, s.l.watermark(m, name)))
		}
		for _, st := range streams {
			ahead[mi] = append(ahead[mi], pipe.Get(ctx, s.l.ahead(m, st.name)))
		}
	}
	readyCmd := pipe.ZRange(ctx, s.l.ready(), 0, -1)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return out, unavailable(err)
	}
	// Their endpoints' ids, and the queues of those with work.
	ready := readyCmd.Val()
	pipe = s.rdb.Pipeline()
	var sets [len(invoicing.Modes)][]*redis.StringSliceCmd
	for mi, m := range invoicing.Modes {
		for _, co := range cos[mi].Val() {
			sets[mi] = append(sets[mi], pipe.SMembers(ctx, s.l.endpoints(m, co)))
		}
	}
	queues := make(map[string]queueCmds, len(ready))
	for _, ep := range ready {
		queues[ep] = queueCmds{due: pipe.ZCount(ctx, s.l.queue(ep), "-inf", strconv.FormatInt(now, 10)), queued: pipe.ZCard(ctx, s.l.queue(ep)),
			leased: pipe.ZCard(ctx, s.l.lease(ep)), first: pipe.ZRangeWithScores(ctx, s.l.queue(ep), 0, 0)}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return out, unavailable(err)
	}
	// Each endpoint's state.
	pipe = s.rdb.Pipeline()
	var states [len(invoicing.Modes)]map[string]*redis.SliceCmd
	for mi := range invoicing.Modes {
		states[mi] = map[string]*redis.SliceCmd{}
		for _, set := range sets[mi] {
			for _, ep := range set.Val() {
				states[mi][ep] = pipe.HMGet(ctx, s.l.endpoint(ep), "enabled", "failing")
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return out, unavailable(err)
	}
	for mi := range invoicing.Modes {
		out[mi] = tally(marks[mi], states[mi], queues)
		for _, c := range ahead[mi] {
			out[mi].Ahead = append(out[mi].Ahead, c.Val())
		}
	}
	return out, nil
}

// queueCmds read an endpoint's queue: due now, queued, leased, the first.
type queueCmds struct {
	due, queued, leased *redis.IntCmd
	first               *redis.ZSliceCmd
}

// tally is a mode's state from what was read: its watermarks, its
// endpoints' states and the queues of those with work.
func tally(marks []*redis.StringCmd, states map[string]*redis.SliceCmd, queues map[string]queueCmds) modeStats {
	st := modeStats{OldestDue: -1}
	for _, c := range marks {
		st.Marks = append(st.Marks, c.Val())
	}
	for ep, c := range states {
		v := c.Val()
		enabled, failing := v[0] == "1", v[1] != nil
		switch {
		case v[0] == "0":
			st.Disabled++
			continue
		case !enabled: // deleted meanwhile
			continue
		case failing:
			st.Failing++
		default:
			st.Healthy++
		}
		q, ok := queues[ep]
		if !ok {
			continue
		}
		due := q.due.Val()
		st.Due += due
		st.Scheduled += q.queued.Val() - due
		st.InFlight += q.leased.Val()
		if first := q.first.Val(); due > 0 && !failing && len(first) == 1 && (st.OldestDue < 0 || int64(first[0].Score) < st.OldestDue) {
			st.OldestDue = int64(first[0].Score)
		}
	}
	return st
}

// markTime is how far a stream's watermark says detection is done: changes
// before it are queued. For the overdue loop (its watermark starts with the
// first due date not done), the moment that date's invoices became
// overdue: the next day's start in Luanda. ok is false without a watermark.
func markTime(stream, raw string) (time.Time, bool) {
	if stream != "overdue" {
		p, ok := decodeMark(raw)
		if !ok {
			return time.Time{}, false
		}
		return *p.At, true
	}
	from, _, _ := strings.Cut(raw, "|")
	d, err := time.ParseInLocation("2006-01-02", from, luanda)
	if err != nil {
		return time.Time{}, false
	}
	return d.AddDate(0, 0, 1), true
}

// statsCollector reports the shared state at scrape time. A Redis that does
// not answer within a few seconds leaves these series out of the scrape
// (the rest of /metrics is still served).
type statsCollector struct{ s *Service }

var (
	descEndpoints = prometheus.NewDesc("gateway_events_endpoints",
		"Webhook endpoints by mode and state (healthy; failing: enabled, its last delivery failed; disabled).", []string{"mode", "state"}, nil)
	descBacklog = prometheus.NewDesc("gateway_events_backlog",
		"Deliveries to enabled endpoints not yet done, by mode and state (due: waiting for a free slot; scheduled: waiting for their retry's time; in_flight).", []string{"mode", "state"}, nil)
	descOldestDue = prometheus.NewDesc("gateway_events_oldest_due_seconds",
		"How long the oldest due delivery to a healthy endpoint has waited past its due time, by mode; 0 when none waits.", []string{"mode"}, nil)
	descLag = prometheus.NewDesc("gateway_events_detector_lag_seconds",
		"Now minus the time detection has read every committed change up to, by mode and stream (invoices, clients, transmissions; overdue: since the oldest due date not yet processed turned overdue, 0 when none).", []string{"mode", "stream"}, nil)
)

func (c statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descEndpoints, descBacklog, descOldestDue, descLag} {
		ch <- d
	}
}

func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	all, err := c.s.stats(ctx)
	if err != nil {
		c.s.logger.Debug("events: metrics of the queue not read", "err", err)
		return
	}
	now := c.s.now()
	g := prometheus.GaugeValue
	for mi, st := range all {
		mode := string(invoicing.Modes[mi])
		ch <- prometheus.MustNewConstMetric(descEndpoints, g, float64(st.Healthy), mode, "healthy")
		ch <- prometheus.MustNewConstMetric(descEndpoints, g, float64(st.Failing), mode, "failing")
		ch <- prometheus.MustNewConstMetric(descEndpoints, g, float64(st.Disabled), mode, "disabled")
		ch <- prometheus.MustNewConstMetric(descBacklog, g, float64(st.Due), mode, "due")
		ch <- prometheus.MustNewConstMetric(descBacklog, g, float64(st.Scheduled), mode, "scheduled")
		ch <- prometheus.MustNewConstMetric(descBacklog, g, float64(st.InFlight), mode, "in_flight")
		age := 0.0
		if st.OldestDue >= 0 {
			age = max(0, now.Sub(time.UnixMilli(st.OldestDue)).Seconds())
		}
		ch <- prometheus.MustNewConstMetric(descOldestDue, g, age, mode)
		for i, name := range markStreams {
			if i < len(st.Marks) {
				if at, ok := markTime(name, st.Marks[i]); ok {
					if i < len(st.Ahead) {
						if p, ok := decodeMark(st.Ahead[i]); ok && p.At.After(at) {
							at = *p.At // held back by a transaction in flight, read further
						}
					}
					ch <- prometheus.MustNewConstMetric(descLag, g, max(0, now.Sub(at).Seconds()), mode, name)
				}
			}
		}
	}
}
