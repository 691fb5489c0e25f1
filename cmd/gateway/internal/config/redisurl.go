package config

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The forms of GATEWAY_REDIS_URL. The scheme picks the topology, so that the
// same binary and configuration keys serve a single Redis, Sentinel and
// Cluster; after the scheme, each form is what go-redis parses for it
// (ParseURL, ParseFailoverURL, ParseClusterURL), query options included:
//
//	redis://[user:pass@]host:port[/db]                       one server
//	rediss://...                                             the same over TLS
//	redis+sentinel://[user:pass@]sentinel:port[/db]?master_name=NAME[&addr=sentinel2:port...][&password=MASTERPASS]
//	redis+cluster://[user:pass@]node:port[?addr=node2:port...]  Redis Cluster (seed nodes; db 0 only)
//	rediss+sentinel://..., rediss+cluster://...              over TLS
//
// A "+topology" suffix on the scheme (rather than a query parameter) makes
// the topology visible at a glance and impossible to misspell silently: an
// unknown scheme is refused.
const (
	redisSchemeSentinel = "+sentinel"
	redisSchemeCluster  = "+cluster"
)

// RedisTopology splits raw into its topology ("single", "sentinel",
// "cluster") and the URL go-redis expects (scheme redis or rediss).
func RedisTopology(raw string) (topology, plain string, err error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "", "", errors.New("is not a URL (redis://host:port/db)")
	}
	base, suffix := scheme, ""
	if i := strings.IndexByte(scheme, '+'); i >= 0 {
		base, suffix = scheme[:i], scheme[i:]
	}
	if base != "redis" && base != "rediss" {
		return "", "", fmt.Errorf("scheme %q: must be redis, rediss, redis+sentinel, redis+cluster (or rediss+...)", scheme)
	}
	plain = base + "://" + rest
	switch suffix {
	case "":
		return "single", plain, nil
	case redisSchemeSentinel:
		return "sentinel", plain, nil
	case redisSchemeCluster:
		return "cluster", plain, nil
	}
	return "", "", fmt.Errorf("scheme %q: must be redis, rediss, redis+sentinel, redis+cluster (or rediss+...)", scheme)
}

// clusterStateReload is how old a cluster client's map of slots to masters
// may get before it is read again. go-redis reads it again at once on a
// MOVED answer, but not when a master is gone: after a failover it would
// send that master's slots to the dead node, failing every command of
// them, until the map is a minute old (its default). Reading the slots
// costs one CLUSTER SLOTS per instance every 2 s while commands flow.
const clusterStateReload = 2 * time.Second

// NewRedisClient parses raw (see the forms above) and returns a client of the
// topology it names. Every form enables ContextTimeoutEnabled: without it
// go-redis ignores context deadlines, and a hung Redis would hold each
// request for the client's read timeout.
func NewRedisClient(raw string) (redis.UniversalClient, error) {
	c, err := parseRedisClient(raw)
	var ue *url.Error
	if errors.As(err, &ue) { // its message quotes the URL, password included
		return nil, ue.Err
	}
	return c, err
}

func parseRedisClient(raw string) (redis.UniversalClient, error) {
	topology, plain, err := RedisTopology(raw)
	if err != nil {
		return nil, err
	}
	switch topology {
	case "sentinel":
		opt, err := redis.ParseFailoverURL(plain)
		if err != nil {
			return nil, err
		}
		if opt.MasterName == "" {
			return nil, fmt.Errorf("a sentinel URL needs ?master_name=NAME")
		}
		opt.ContextTimeoutEnabled = true
		return redis.NewFailoverClient(opt), nil
	case "cluster":
		// go-redis ignores a path here; refuse it rather than silently
		// serve database 0 to someone who asked for another.
		if u, err := url.Parse(plain); err == nil && u.Path != "" && u.Path != "/" && u.Path != "/0" {
			return nil, errors.New("a Redis Cluster has database 0 only: remove the /db path")
		}
		opt, err := redis.ParseClusterURL(plain)
		if err != nil {
			return nil, err
		}
		opt.ContextTimeoutEnabled = true
		if opt.ClusterStateReloadInterval == 0 {
			opt.ClusterStateReloadInterval = clusterStateReload
		}
		return redis.NewClusterClient(opt), nil
	}
	opt, err := redis.ParseURL(plain)
	if err != nil {
		return nil, err
	}
	opt.ContextTimeoutEnabled = true
	return redis.NewClient(opt), nil
}

// checkRedisURL validates raw without connecting (no client is kept).
func checkRedisURL(raw string) error {
	c, err := NewRedisClient(raw)
	if err != nil {
		return err
	}
	return c.Close()
}

// AutoReplicas is redisMinReplicas's default: as many replicas as Redis's
// topology calls for, one where it is replicated and none where it is not.
const AutoReplicas = "auto"

// ParseMinReplicas reads redisMinReplicas: "auto" (or empty, as unset) or
// a number of replicas, "0" included.
func ParseMinReplicas(s string) (n int, auto bool, err error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, AutoReplicas) {
		return 0, true, nil
	}
	n, err = strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("%q is not auto or a number of replicas (0 opts out: no replica confirms a change)", s)
	}
	return n, false, nil
}
