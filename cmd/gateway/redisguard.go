package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/internal/durable"
	"github.com/invoicing-ao/gateway/internal/redisstate"
)

// redisGuard is what the binary knows and does about the Redis the control
// plane lives in: how many replicas each change waits for (target, which
// every component shares), and what Redis allows (watcher), from which
// start-up names what may lose state and refuses an evicting Redis, and
// the later readings log what changes.
//
// With redisMinReplicas auto, the target follows the topology: Sentinel,
// or a Cluster with a replica on a master, or one server with a replica
// online is replicated, and every change then waits for one replica. Until
// Redis has been read (it is down at start), changes wait for one: a Redis
// without replicas then refuses them as unconfirmed, never reports them
// done unconfirmed. Once found replicated, it stays so while the process
// runs: a replica that goes away makes changes refused, not silently
// unconfirmed. A server that will not say (INFO refused) waits for none,
// and start-up says so.
type redisGuard struct {
	target  *durable.Target
	fixed   int  // redisMinReplicas when not auto
	auto    bool // redisMinReplicas auto
	watcher *redisstate.Watcher
	logger  *slog.Logger

	mu         sync.Mutex
	replicated bool // auto found replicas once
	started    bool // start-up has logged the first reading: log changes
}

// newRedisGuard makes the guard's target from cfg; watch must follow
// before Redis is read.
func newRedisGuard(cfg config.Config, logger *slog.Logger) *redisGuard {
	n, auto, _ := config.ParseMinReplicas(cfg.RedisMinReplicas) // validated with the configuration
	g := &redisGuard{fixed: n, auto: auto, logger: logger}
	if auto {
		n = 1 // until Redis has been read
	}
	g.target = durable.NewTarget(n)
	return g
}

// watch makes the watcher of rdb, registering its metrics with reg (nil:
// none), and reads Redis at once when read is set: the target is then
// Redis's for a command, and start-up has a reading to judge.
func (g *redisGuard) watch(ctx context.Context, cfg config.Config, rdb redis.UniversalClient, reg prometheus.Registerer, read bool) error {
	topology, _, _ := config.RedisTopology(cfg.RedisURL) // validated with the configuration
	label := config.RedactURL(cfg.RedisURL)
	if _, rest, ok := strings.Cut(label, "@"); ok {
		label = rest
	} else if _, rest, ok := strings.Cut(label, "://"); ok {
		label = rest
	}
	src := redisstate.Source{Redis: rdb, Topology: redisstate.Topology(topology), Label: label}
	if topology == "sentinel" {
		_, plain, _ := config.RedisTopology(cfg.RedisURL)
		src.Sentinel, _ = redis.ParseFailoverURL(plain) // validated with the configuration
	}
	w, err := redisstate.NewWatcher(redisstate.Config{Source: src, OnReport: g.onReport, Metrics: reg, WaitFor: g.target.Replicas})
	if err != nil {
		return err
	}
	g.watcher = w
	if read {
		w.Check(ctx)
	}
	return nil
}

// onReport follows each reading: the target, then, once start-up has
// spoken, what changed.
func (g *redisGuard) onReport(before, after redisstate.Report) {
	g.mu.Lock()
	defer g.mu.Unlock()
	raised := g.resolve(after)
	if !g.started {
		return
	}
	if raised {
		g.logger.Info("Redis is replicated: every change now waits for a replica to confirm it", "replicas", g.target.Replicas())
	}
	g.logChanges(before, after)
}

// resolve sets the target from a reading; it reports whether auto found
// replicas it had not seen.
func (g *redisGuard) resolve(r redisstate.Report) (raised bool) {
	if !g.auto {
		g.target.Set(g.fixed)
		return false
	}
	yes, _ := r.Replicated()
	switch {
	case yes:
		raised = !g.replicated && g.target.Replicas() == 0
		g.replicated = true
		g.target.Set(1)
	case g.replicated || r.Err != nil:
		// Once replicated, always; unreachable, as it was.
	default: // not replicated, or Redis would not say (start-up says so)
		g.target.Set(0)
	}
	return raised
}

// errEviction refuses serve on a Redis that may evict the control plane.
var errEviction = errors.New("the control plane's records may be evicted")

// startup logs what the first reading found and refuses a Redis whose
// eviction policy may delete the control plane's records, unless
// redisAllowEviction. A Redis that could not be read is not judged here:
// the dependency watcher says it is down, and the readings go on.
func (g *redisGuard) startup(cfg config.Config) error { return g.startupOn(cfg, g.watcher.Last()) }

// startupOn is startup on reading r.
func (g *redisGuard) startupOn(cfg config.Config, r redisstate.Report) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.started = true
	if r.Err != nil {
		return nil
	}
	var unknown []string
	for _, c := range r.Checks() {
		switch {
		case c.Name == redisstate.Eviction && c.State == redisstate.AtRisk && !cfg.RedisAllowEviction:
			return fmt.Errorf("%w: %s; or start anyway with redisAllowEviction: true (GATEWAY_REDIS_ALLOW_EVICTION=true)", errEviction, c.Why)
		case c.Name == redisstate.Eviction && c.State == redisstate.AtRisk:
			g.logger.Warn("Redis may evict the control plane's records; started anyway ("+config.SettingName("RedisAllowEviction")+")", "server", c.Server, "why", c.Why)
		case c.State == redisstate.AtRisk:
			g.logger.Warn("Redis may lose the control plane's state", "check", c.Name, "server", c.Server, "why", c.Why)
		case c.State == redisstate.Unknown:
			unknown = append(unknown, c.Name)
		}
	}
	if len(unknown) > 0 {
		g.logger.Info("Redis does not say what it allows (CONFIG GET or INFO refused, as managed Redis may): unknown; check it with its provider",
			"checks", unknown)
	}
	g.logReplicas(r)
	return nil
}

// logReplicas says, at start, how many replicas changes wait for and
// whether Redis has them.
func (g *redisGuard) logReplicas(r redisstate.Report) {
	want, online := g.target.Replicas(), r.Check(redisstate.Replicas)
	have, _ := strconv.Atoi(online.Value)
	switch {
	case !g.auto && g.fixed == 0:
		g.logger.Warn(config.SettingName("RedisMinReplicas")+" is 0: no change waits for a Redis replica, and a Redis failover may lose the last changes (a revocation included)",
			"replicas", online.Value)
	case want == 0 && online.State == redisstate.Unknown:
		g.logger.Warn("Redis does not say whether it has replicas (INFO refused): no change waits for one; set " + config.SettingName("RedisMinReplicas") + " to the number it has")
	case want == 0:
		g.logger.Warn("Redis has no replica: a change is reported done once the Redis master has it, and is lost with it")
	case online.State != redisstate.Unknown && have < want:
		g.logger.Warn("Redis master has fewer replicas online than changes wait for: every key, limit, webhook endpoint and audit change will be refused as unconfirmed until they are back",
			"server", online.Server, "replicas", have, "wanted", want)
	}
}

// logChanges logs the checks whose verdict changed between two readings
// (a Redis that went down is the dependency watcher's to report).
func (g *redisGuard) logChanges(before, after redisstate.Report) {
	if after.Err != nil {
		return
	}
	for _, c := range after.Checks() {
		was := before.Check(c.Name)
		if c.State == was.State && c.Value == was.Value {
			continue
		}
		switch c.State {
		case redisstate.AtRisk:
			g.logger.Warn("Redis may lose the control plane's state", "check", c.Name, "server", c.Server, "why", c.Why)
		case redisstate.OK:
			g.logger.Info("Redis check ok", "check", c.Name, "value", c.Value)
		}
	}
	want, online := g.target.Replicas(), after.Check(redisstate.Replicas)
	if have, err := strconv.Atoi(online.Value); err == nil && have < want && before.Check(redisstate.Replicas).Value != online.Value {
		g.logger.Warn("Redis master has fewer replicas online than changes wait for: changes are refused as unconfirmed until they are back",
			"server", online.Server, "replicas", have, "wanted", want)
	}
}

// readiness is what /readyz says of Redis: each check's state and value,
// how many replicas changes wait for, and when Redis was last read.
func (g *redisGuard) readiness() any {
	r := g.watcher.Last()
	m := map[string]any{"changesWaitForReplicas": g.target.Replicas()}
	for _, c := range r.Checks() {
		m[c.Name] = map[string]string{"state": string(c.State), "value": c.Value}
	}
	if !r.At.IsZero() {
		m["checkedAt"] = r.At.UTC()
	}
	return m
}

// run reads Redis each minute until ctx ends (serve).
func (g *redisGuard) run(ctx context.Context) { g.watcher.Run(ctx) }
