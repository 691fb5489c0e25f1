package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/internal/redisscan"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Export and import of the audit log (state, `gateway state
// export|import`): every company's stream, entry by entry, with its id.
// The rule of a merge is the union: an entry is identified by its id (the
// millisecond it was recorded and a sequence), entries that Redis has are
// kept as they are, the others are added in their place; entries older
// than the retention are not brought back. Importing twice adds nothing
// the second time.

// StateVersion is the version of the audit log's part of an export.
const StateVersion = 1

// State is the audit log's part of an export.
type State struct {
	Version   int            `json:"version"`
	Companies []StreamRecord `json:"companies"`
}

// StreamRecord is one company's log, oldest first.
type StreamRecord struct {
	CompanyID string        `json:"companyId"`
	Entries   []EntryRecord `json:"entries"`
}

// EntryRecord is one entry as the stream keeps it: its id and fields (time
// in Unix ms, actor, action, and when set key, webhook, before, after).
type EntryRecord struct {
	ID     string            `json:"id"`
	Fields map[string]string `json:"fields"`
}

// ErrInvalidState: the audit log of an export cannot be imported.
var ErrInvalidState = errors.New("invalid record")

// ExportState reads every company's log.
func (l *Log) ExportState(ctx context.Context) (State, error) {
	names, err := redisscan.Keys(ctx, l.rdb, l.prefix+"{*}")
	if err != nil {
		return State{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	s := State{Version: StateVersion, Companies: []StreamRecord{}}
	for _, n := range names {
		company := strings.TrimSuffix(strings.TrimPrefix(n, l.prefix+"{"), "}")
		if c, ok := invoicing.CanonicalUUID(company); !ok || c != company || n != l.stream(company) {
			continue // not a company's stream (a merge's scratch key)
		}
		msgs, err := l.rdb.XRange(ctx, n, "-", "+").Result()
		if err != nil {
			return State{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		r := StreamRecord{CompanyID: company, Entries: make([]EntryRecord, 0, len(msgs))}
		for _, m := range msgs {
			f := make(map[string]string, len(m.Values))
			for k, v := range m.Values {
				f[k], _ = v.(string)
			}
			r.Entries = append(r.Entries, EntryRecord{ID: m.ID, Fields: f})
		}
		if len(r.Entries) > 0 {
			s.Companies = append(s.Companies, r)
		}
	}
	return s, nil
}

// maxEntryViews bounds an imported entry's before and after: far above what
// a change records (a key's or an endpoint's view, its text bounded), far
// below what would make the log a store of anything.
const maxEntryViews = 64 << 10

var entryID = regexp.MustCompile(`^[0-9]{1,15}-[0-9]{1,19}$`)

// check refuses an entry that Record would not have made.
func (r EntryRecord) check(company string) error {
	bad := func(what string) error {
		return fmt.Errorf("%w: company %s, entry %s: %s", ErrInvalidState, company, invoicing.Clip(r.ID), what)
	}
	if !entryID.MatchString(r.ID) {
		return bad("not a stream entry id")
	}
	if n := len(r.Fields["before"]) + len(r.Fields["after"]); n > maxEntryViews {
		return bad(fmt.Sprintf("before and after of %d bytes: no change of the gateway's makes more than %d", n, maxEntryViews))
	}
	for f := range r.Fields {
		if !slices.Contains([]string{"time", "actor", "action", "key", "webhook", "before", "after"}, f) {
			return bad("unknown field " + strconv.Quote(invoicing.Clip(f)))
		}
	}
	ms, err := strconv.ParseInt(r.Fields["time"], 10, 64)
	if err != nil {
		return bad("time")
	}
	e := Entry{Time: time.UnixMilli(ms), Actor: r.Fields["actor"], CompanyID: company, Action: r.Fields["action"],
		KeyID: r.Fields["key"], WebhookID: r.Fields["webhook"]}
	if v := r.Fields["before"]; v != "" {
		e.Before = json.RawMessage(v)
	}
	if v := r.Fields["after"]; v != "" {
		e.After = json.RawMessage(v)
	}
	if err := e.check(); err != nil {
		return bad(err.Error())
	}
	return nil
}

// Records is how many entries s holds.
func (s State) Records() int {
	n := 0
	for _, c := range s.Companies {
		n += len(c.Entries)
	}
	return n
}
