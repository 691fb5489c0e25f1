package config

import "strings"

// ReplicaOf is the read replica URL of a database setting (LiveDatabaseURL
// or TestDatabaseURL; "" for none).
func (c Config) ReplicaOf(databaseField string) string {
	if databaseField == "LiveDatabaseURL" {
		return c.LiveReplicaURL
	}
	return c.TestReplicaURL
}

// checkReplicas validates the optional read replicas: each of its primary's
// engine, and none that could let a TEST key read live data or the reverse.
func (c Config) checkReplicas(bad func(field, msg string)) {
	engine := func(u string) string {
		switch {
		case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
			return "postgres"
		case strings.HasPrefix(u, "sqlite:") && len(u) > len("sqlite:"):
			return "sqlite"
		}
		return ""
	}
	for _, r := range []struct{ field, replica, primary, other string }{
		{"LiveReplicaURL", c.LiveReplicaURL, c.LiveDatabaseURL, c.TestDatabaseURL},
		{"TestReplicaURL", c.TestReplicaURL, c.TestDatabaseURL, c.LiveDatabaseURL},
	} {
		switch {
		case r.replica == "":
		case engine(r.replica) == "":
			bad(r.field, "must start with postgres:// or sqlite: (or be empty: no replica)")
		case engine(r.replica) != engine(r.primary):
			bad(r.field, "must use the same engine as its primary database")
		case r.replica == r.other:
			bad(r.field, "must not be the other mode's database: TEST keys must never reach live data")
		}
	}
	if c.LiveReplicaURL != "" && c.LiveReplicaURL == c.TestReplicaURL {
		bad("TestReplicaURL", "must differ from the live replica: TEST keys must never reach live data")
	}
}
