// Package state takes a copy of the control plane in Redis (keys, limits,
// webhook endpoints) into one file, and puts one back: the file's format,
// its versions, its checksum, its signature (a key derived from the
// secrets' key: internal/seal) and its encryption (age, as the secrets at
// rest), and the order of an import's writes, its audit entries last. It
// knows no record: each adapter exports and imports its own part, by the
// rules of its layout (Part), so that a layout and its copy change together.
// The audit log lives in the gateway's own database, backed up with it; an
// older file's audit part is still imported (Part.ImportOnly), in a
// transaction of that database held around the Redis writes (Around).
package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/durable"
)

// A Part is one adapter's share of the control plane.
type Part struct {
	// Name is the part's name in the file: keys, limits, webhooks, audit.
	Name string
	// ImportOnly is a part files no longer carry (the audit log's, now in
	// the gateway's database): an export leaves it out, and an import
	// takes it when a file (an older gateway's) has it. Export may be nil.
	ImportOnly bool
	// Export reads the part (JSON-encodable, with its own version) and
	// says how many records it holds.
	Export func(ctx context.Context) (v any, records int, err error)
	// Plan reads a part from a file, checks every record, reads Redis's
	// and decides what to write: it writes nothing.
	Plan func(ctx context.Context, raw json.RawMessage) (Plan, error)
}

// A Plan is what an import of a part will write.
type Plan interface {
	// Counts are the records added, updated (merged) and left unchanged.
	Counts() (added, updated, unchanged int)
	// Queue adds the writes of a phase (0, 1, 2, in that order) to p.
	Queue(ctx context.Context, phase int, p redis.Pipeliner)
}

// Around is a plan whose writes are not Redis's (the audit log's, in the
// gateway's database): Around makes them in a transaction of its own and
// calls write, with the ctx it is given, before it commits, so that they
// are committed if and only if write (the Redis writes, and the plans
// around them after this one) succeeds.
type Around interface {
	Around(ctx context.Context, write func(ctx context.Context) error) error
}

// Companies is what a plan that holds companies' records changes in each
// company: EachCompany calls f with the records it adds and updates there.
// Every adapter's plan has it; the import's audit entries are made of it.
type Companies interface {
	EachCompany(f func(company string, added, updated int))
}

// A Report is what an import changes, before it is written: for the
// import's own audit entries (Config.Audit).
type Report struct {
	ExportedAt time.Time
	Gateway    string // the gateway that wrote the file
	Signed     bool   // Document.Signed
	// Companies are the changes in each company, by part (keys, limits,
	// webhooks, audit); a company the import does not change is absent.
	Companies map[string]map[string]Counts
}

// phases is how many phases of writes an import has (authz needs three:
// a key is counted before it is indexed, and indexed before it works).
const phases = 3

// Config configures export and import.
type Config struct {
	Redis redis.UniversalClient // required
	Parts []Part                // every part; a file must hold each of them
	// Durable is how many replicas must acknowledge an import before it is
	// reported done (one server or Sentinel); zero waits for none.
	Durable durable.Policy
	Gateway string           // the version written into a file
	Now     func() time.Time // nil means time.Now
	// Audit plans the import's own audit entries from its report; they
	// are written with its writes, last, so that an import is recorded if
	// and only if it is written. Nil records none.
	Audit func(ctx context.Context, r Report) (Plan, error)
}

// Counts are one part's figures of an import, and its plan (for what the
// adapter says of it beyond the figures).
type Counts struct {
	Added, Updated, Unchanged int
	Plan                      Plan `json:"-"`
}

// Export writes a copy of every part to w, encrypted as s says, and
// returns how many records of each part it holds.
func Export(ctx context.Context, cfg Config, w io.Writer, s Sealing) (map[string]int, error) {
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	doc := Document{Format: Format, CreatedAt: now().UTC(), Gateway: cfg.Gateway, Parts: map[string]json.RawMessage{}}
	records := map[string]int{}
	for _, p := range cfg.Parts {
		if p.ImportOnly {
			continue
		}
		v, n, err := p.Export(ctx)
		if err != nil {
			return nil, fmt.Errorf("exporting the %s: %w", p.Name, err)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		doc.Parts[p.Name], records[p.Name] = raw, n
	}
	return records, encode(w, doc, s)
}

// Read reads and checks a file; nothing of it is used before it holds.
func Read(r io.Reader, o Opening) (Document, error) { return decode(r, o) }

// ErrNotWritten: an import whose writes failed. On one Redis or Sentinel
// they are one transaction: nothing was written, unless the connection
// broke after the transaction was sent (then it is unknown): import again.
// On Cluster they are written slot by slot, in an order that never leaves a
// usable key uncounted: import again to write the rest (an import is
// idempotent).
var ErrNotWritten = errors.New("the import's writes failed; import the same file again (it is safe)")

// Import puts doc's parts into Redis: every part is planned (read and
// checked) before the first write, so that a file refused for any reason
// changes nothing; then the writes are made, in one transaction where
// Redis allows it.
func Import(ctx context.Context, cfg Config, doc Document) (map[string]Counts, error) {
	var unknown []string
	for name := range doc.Parts {
		if !slices.ContainsFunc(cfg.Parts, func(p Part) bool { return p.Name == name }) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%w: it has parts this gateway does not know: %v", ErrForeign, unknown)
	}
	plans := make([]Plan, 0, len(cfg.Parts)+1)
	var names []string // each plan's part
	out := map[string]Counts{}
	for _, p := range cfg.Parts {
		raw, ok := doc.Parts[p.Name]
		switch {
		case !ok && p.ImportOnly:
			continue
		case !ok:
			return nil, fmt.Errorf("%w: it has no %s", ErrNotAnExport, p.Name)
		}
		plan, err := p.Plan(ctx, raw)
		if err != nil {
			return nil, fmt.Errorf("the file's %s: %w", p.Name, err)
		}
		plans, names = append(plans, plan), append(names, p.Name)
		a, u, n := plan.Counts()
		out[p.Name] = Counts{a, u, n, plan}
	}
	if cfg.Audit != nil {
		plan, err := cfg.Audit(ctx, report(doc, names, plans))
		if err != nil {
			return nil, fmt.Errorf("recording the import in the audit log: %w", err)
		}
		plans = append(plans, plan)
	}
	if err := applyAround(ctx, cfg, plans); errors.Is(err, ErrNotReplicated) || errors.Is(err, ErrNotAudited) {
		return out, err
	} else if err != nil {
		return out, fmt.Errorf("%w: %w", ErrNotWritten, err)
	}
	for _, p := range plans {
		if a, ok := p.(interface{ Announce(context.Context) }); ok {
			a.Announce(ctx)
		}
	}
	return out, nil
}

// ErrNotAudited: the import is written in Redis, but the gateway's
// database did not commit the writes around it (the older file's audit
// entries, the import's own record).
var ErrNotAudited = errors.New("the import is written, but the gateway's database did not commit its audit entries " +
	"(the file's audit log and the import's own record); import the same file again once the database answers")

// applyAround makes the Redis writes (apply) within the transactions of
// the plans that write elsewhere (Around), nested in their order: those
// commit once the Redis writes are made (confirmed by the replicas or
// not), and roll back when they fail.
func applyAround(ctx context.Context, cfg Config, plans []Plan) error {
	var around []Around
	for _, p := range plans {
		if a, ok := p.(Around); ok {
			around = append(around, a)
		}
	}
	var written error
	called := false // the Redis writes were tried
	var nest func(ctx context.Context, rest []Around) error
	nest = func(ctx context.Context, rest []Around) error {
		if len(rest) == 0 {
			called, written = true, apply(ctx, cfg, plans)
			if errors.Is(written, ErrNotReplicated) {
				return nil // written on the master: what is around it commits
			}
			return written
		}
		return rest[0].Around(ctx, func(ctx context.Context) error { return nest(ctx, rest[1:]) })
	}
	err := nest(ctx, around)
	switch {
	case err == nil:
		return written
	case !called:
		return err // a transaction could not begin: nothing is written
	case written != nil && !errors.Is(written, ErrNotReplicated):
		return written // not written, and nothing committed
	}
	return fmt.Errorf("%w: %w", ErrNotAudited, err) // written, but what is around it not committed
}

// report is what the plans change, company by company.
func report(doc Document, names []string, plans []Plan) Report {
	r := Report{ExportedAt: doc.CreatedAt, Gateway: doc.Gateway, Signed: doc.Signed, Companies: map[string]map[string]Counts{}}
	for i, plan := range plans {
		cs, ok := plan.(Companies)
		if !ok {
			continue
		}
		cs.EachCompany(func(company string, added, updated int) {
			if added+updated == 0 {
				return
			}
			if r.Companies[company] == nil {
				r.Companies[company] = map[string]Counts{}
			}
			r.Companies[company][names[i]] = Counts{Added: added, Updated: updated}
		})
	}
	return r
}

// apply makes the plans' writes: on one server or Sentinel, one MULTI/EXEC
// on one connection, then the replicas' acknowledgement; on Cluster, where
// a transaction holds one slot, phase after phase, each write atomic.
func apply(ctx context.Context, cfg Config, plans []Plan) error {
	queue := func(p redis.Pipeliner, phase int) {
		for _, plan := range plans {
			plan.Queue(ctx, phase, p)
		}
	}
	switch c := cfg.Redis.(type) {
	case *redis.ClusterClient:
		for phase := range phases {
			pipe := c.Pipeline()
			queue(pipe, phase)
			if pipe.Len() == 0 {
				continue
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	case *redis.Client:
		conn := c.Conn()
		defer conn.Close()
		n := 0
		_, err := conn.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for phase := range phases {
				queue(p, phase)
			}
			n = p.Len()
			return nil
		})
		if err != nil || n == 0 || cfg.Durable.Replicas <= 0 {
			return err
		}
		return waitReplicas(ctx, conn, cfg.Durable)
	}
	return fmt.Errorf("state: cannot import through a %T", cfg.Redis)
}

// ErrNotReplicated: the import is written on the master, but fewer replicas
// than required acknowledged it in time: a failover now could lose it.
// Importing again is safe, and confirms it once the replicas answer.
var ErrNotReplicated = errors.New("the import is written, but Redis's replicas did not confirm it in time; import the same file again once they are back")

// waitReplicas waits, on the connection that made the writes, for the
// policy's replicas (internal/durable explains why the same connection).
func waitReplicas(ctx context.Context, conn *redis.Conn, p durable.Policy) error {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = durable.DefaultTimeout
	}
	n, err := conn.Wait(ctx, p.Replicas, timeout).Result()
	if err != nil || n < int64(p.Replicas) {
		return fmt.Errorf("%w (%d of %d replicas, %v)", ErrNotReplicated, n, p.Replicas, err)
	}
	return nil
}
