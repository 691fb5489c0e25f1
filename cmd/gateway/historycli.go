package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/internal/sqldb"
)

// `gateway history migrate|status`: the gateway's own database by hand
// (historydb.go has what serve does with it).

// trackState is where one track of the database is, as status says it.
type trackState struct {
	Track   string     `json:"track"`
	Applied int        `json:"applied"` // the last version applied; 0: none
	Latest  int        `json:"latest"`  // the last this binary knows
	Pending []stepView `json:"pending"` // what migrate would apply, in order
}

// stepView is a migration as --json prints it.
type stepView struct {
	Track   string `json:"track"`
	Version int    `json:"version"`
	Name    string `json:"name"`
}

func viewSteps(steps []sqldb.Step) []stepView {
	out := make([]stepView, len(steps))
	for i, s := range steps {
		out[i] = stepView{s.Track, s.Version, s.Name}
	}
	return out
}

// describeSteps says migrations in a sentence ("audit 1 (audit heads and
// entries), events_history 1 (…)").
func describeSteps(steps []stepView) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = sqldb.Step{Track: s.Track, Version: s.Version, Name: s.Name}.String()
	}
	return strings.Join(parts, ", ")
}

// historyState is a database's migrations, track by track.
type historyState struct {
	Database string       `json:"database"`
	Engine   string       `json:"engine"`
	Tracks   []trackState `json:"tracks"`
	UpToDate bool         `json:"upToDate"`
}

// readHistoryState reads h's migrations; a database this binary must not
// use is an error saying what to do.
func readHistoryState(ctx context.Context, h *historyDB) (historyState, error) {
	pending, err := h.DB.Check(ctx, historyTracks()...)
	if err != nil {
		return historyState{}, h.fail(err)
	}
	st := historyState{Database: h.target, Engine: engineName(h.DB), UpToDate: len(pending) == 0}
	for _, t := range historyTracks() {
		ts := trackState{Track: t.Name, Latest: len(t.Migrations), Pending: []stepView{}}
		for _, p := range viewSteps(pending) {
			if p.Track == t.Name {
				ts.Pending = append(ts.Pending, p)
			}
		}
		ts.Applied = ts.Latest - len(ts.Pending)
		st.Tracks = append(st.Tracks, ts)
	}
	return st, nil
}

// engineName is the database's engine, with PostgreSQL's version.
func engineName(db *sqldb.DB) string {
	if db.Engine() == sqldb.SQLite {
		return "SQLite"
	}
	v := db.ServerVersion()
	return "PostgreSQL " + strconv.Itoa(v/10000) + "." + strconv.Itoa(v%10000)
}

func historyStatus(asJSON *bool) action {
	return func(ctx context.Context, c *invocation) error {
		cfg, err := c.config()
		if err != nil {
			return err
		}
		h, err := openHistory(ctx, cfg, false)
		if err != nil {
			return err
		}
		defer h.Close()
		st, err := readHistoryState(ctx, h)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(c.stdout).Encode(st)
		}
		printHistoryState(c.stdout, st)
		if !st.UpToDate {
			fmt.Fprintln(c.stdout, "gateway history migrate applies them, as gateway serve does when it starts.")
		}
		return nil
	}
}

func printHistoryState(w io.Writer, st historyState) {
	fmt.Fprintf(w, "The gateway's database %s (%s):\n", st.Database, st.Engine)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, t := range st.Tracks {
		state := "up to date"
		if len(t.Pending) > 0 {
			state = plural(len(t.Pending), "migration", "migrations") + " to apply: " + describeSteps(t.Pending)
		}
		fmt.Fprintf(tw, "  %s\tversion %d of %d\t%s\n", t.Track, t.Applied, t.Latest, state)
	}
	_ = tw.Flush()
}

// migrated is what history migrate did, as --json prints it.
type migrated struct {
	Database  string         `json:"database"`
	Applied   []stepView     `json:"applied"`
	Tracks    []trackState   `json:"tracks"`
	FromRedis audit.Upgraded `json:"auditFromRedis"`
}

func historyMigrate(asJSON *bool) action {
	return func(ctx context.Context, c *invocation) error {
		cfg, err := c.config()
		if err != nil {
			return err
		}
		h, err := openHistory(ctx, cfg, false)
		if err != nil {
			return err
		}
		defer h.Close()
		done, err := h.migrate(ctx)
		if err != nil {
			return err
		}
		st, err := readHistoryState(ctx, h)
		if err != nil {
			return err
		}
		m := migrated{Database: h.target, Applied: viewSteps(done), Tracks: st.Tracks}
		if m.FromRedis, err = copyAuditFromRedis(ctx, cfg, h); err != nil {
			return fmt.Errorf("the database is up to date, but the audit log in Redis is not copied: %w", err)
		}
		if *asJSON {
			return json.NewEncoder(c.stdout).Encode(m)
		}
		printMigrated(c.stdout, m)
		return nil
	}
}

// copyAuditFromRedis copies the audit streams of the earlier layout.
func copyAuditFromRedis(ctx context.Context, cfg config.Config, h *historyDB) (audit.Upgraded, error) {
	rdb, err := config.NewRedisClient(cfg.RedisURL)
	if err != nil {
		return audit.Upgraded{}, fmt.Errorf("setting %s: %w", config.SettingName("RedisURL"), err)
	}
	defer rdb.Close()
	if err := pingRedis(ctx, rdb); err != nil {
		return audit.Upgraded{}, &depError{what: "Redis", setting: config.SettingName("RedisURL"), target: config.RedactURL(cfg.RedisURL), err: err}
	}
	return audit.New(audit.Config{DB: h.DB, Ready: h.Ready}).UpgradeFromRedis(ctx, rdb, auditStreamsPrefix(cfg))
}

func printMigrated(w io.Writer, m migrated) {
	if len(m.Applied) == 0 {
		fmt.Fprintf(w, "The gateway's database %s is up to date: nothing to apply.\n", m.Database)
	} else {
		fmt.Fprintf(w, "Applied %s to the gateway's database %s: %s.\n", plural(len(m.Applied), "migration", "migrations"), m.Database, describeSteps(m.Applied))
	}
	u := m.FromRedis
	switch {
	case u.Streams == 0:
		fmt.Fprintln(w, "Redis holds no audit log of an earlier version: nothing to copy.")
	default:
		fmt.Fprintf(w, "Copied %s of %s from Redis (%d there already, %d past the retention and dropped); copied entries are deleted from Redis.\n",
			plural(u.Copied, "audit entry", "audit entries"), plural(u.Streams, "company", "companies"), u.Present, u.Expired)
	}
	if u.Kept > 0 {
		fmt.Fprintf(w, "%s left in Redis: the log would not have made them (a field it does not know, or a secret's shape).\n",
			plural(u.Kept, "entry is", "entries are"))
	}
}
