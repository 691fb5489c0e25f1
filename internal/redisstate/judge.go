package redisstate

import (
	"fmt"
	"strconv"
)

// State is a check's verdict.
type State string

const (
	OK      State = "ok"      // the state is kept through what the check is about
	AtRisk  State = "at_risk" // it may be lost: Why says how
	Unknown State = "unknown" // the server would not say (or could not be reached)
)

// States are the verdicts, in the order the metrics list them.
var States = []State{OK, AtRisk, Unknown}

// The checks, by name.
const (
	Persistence = "persistence" // a restart keeps the data: AOF or RDB
	Eviction    = "eviction"    // nothing is evicted: maxmemory-policy noeviction
	Replicas    = "replicas"    // a replica holds a copy: every master has one online
)

// Names are the checks, in the order Checks gives them.
var Names = []string{Persistence, Eviction, Replicas}

// Check is the verdict of one check over every master: the weakest.
type Check struct {
	Name  string
	State State
	// Value is what the server has: persistence "aof", "rdb", "aof+rdb"
	// or "none"; eviction, the maxmemory-policy; replicas, the fewest
	// online on a master. Empty when unknown.
	Value string
	// Server is the master the verdict is about (the first at risk).
	Server string
	// Why says, when at risk, what may be lost and the Redis setting
	// that decides it.
	Why string
}

// Checks judges every check.
func (r Report) Checks() []Check {
	return []Check{r.Check(Persistence), r.Check(Eviction), r.Check(Replicas)}
}

// Check judges one check by name.
func (r Report) Check(name string) Check {
	c := Check{Name: name, State: Unknown}
	var judge func(Server) (known bool, value, why string)
	switch name {
	case Persistence:
		judge = persistence
	case Eviction:
		judge = eviction
	case Replicas:
		judge = replicas
	default:
		return c
	}
	unknown := len(r.Servers) == 0
	for _, s := range r.Servers {
		known, value, why := judge(s)
		switch {
		case !known:
			unknown = true
		case why != "" && c.State != AtRisk:
			c.State, c.Value, c.Server, c.Why = AtRisk, value, s.Addr, why
		case c.Value == "" || weaker(name, value, c.Value):
			if c.State != AtRisk {
				c.Value, c.Server = value, s.Addr
			}
		}
	}
	if c.State != AtRisk && !unknown {
		c.State = OK
	}
	if c.State == Unknown {
		c.Value, c.Server = "", ""
	}
	return c
}

func persistence(s Server) (bool, string, string) {
	if !s.ConfigKnown {
		return false, "", ""
	}
	switch {
	case s.AOF && s.RDB:
		return true, "aof+rdb", ""
	case s.AOF:
		return true, "aof", ""
	case s.RDB:
		return true, "rdb", ""
	}
	return true, "none", fmt.Sprintf("Redis %s keeps its data in memory only (appendonly no, save \"\"): a restart empties it; set appendonly yes", s.Addr)
}

func eviction(s Server) (bool, string, string) {
	if !s.ConfigKnown {
		return false, "", ""
	}
	if s.Policy == "noeviction" {
		return true, s.Policy, ""
	}
	limit := "no maxmemory now, which CONFIG SET can change at any time"
	if s.MaxMemory > 0 {
		limit = "maxmemory " + strconv.FormatInt(s.MaxMemory, 10) + " bytes"
	}
	return true, s.Policy, fmt.Sprintf("Redis %s has maxmemory-policy %s (%s): under memory pressure it deletes keys without a word, "+
		"the control plane's records among them; set maxmemory-policy noeviction", s.Addr, s.Policy, limit)
}

func replicas(s Server) (bool, string, string) {
	if !s.ReplicasKnown {
		return false, "", ""
	}
	v := strconv.Itoa(s.Replicas)
	if s.Replicas == 0 {
		return true, v, fmt.Sprintf("Redis %s has no replica online: if it is lost, so is everything since it last persisted", s.Addr)
	}
	return true, v, ""
}

// weaker reports whether value a is weaker than b for the check.
func weaker(name, a, b string) bool {
	switch name {
	case Persistence:
		rank := map[string]int{"none": 0, "rdb": 1, "aof": 2, "aof+rdb": 3}
		return rank[a] < rank[b]
	case Replicas:
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x < y
	}
	return false
}

// Replicated reports whether the deployment keeps copies of each write on
// replicas: Sentinel when its Sentinels know a replica of the master
// (online or not), or always when they would not say (a Sentinel is there
// to fail over to one); Cluster when a master has a replica (online or
// not); one server when it has a replica online. known is false when Redis
// would not say (or could not be reached).
func (r Report) Replicated() (yes, known bool) {
	if r.Topology == Sentinel && !r.SentinelKnown {
		return true, true
	}
	if r.Err != nil || len(r.Servers) == 0 {
		return false, false
	}
	known = true
	for _, s := range r.Servers {
		if !s.ReplicasKnown {
			known = false
		}
		if s.Configured > 0 {
			return true, true
		}
	}
	return false, known
}
