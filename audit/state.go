package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// The audit log's part of an export, as gateways kept it before the log
// moved to the gateway's database: every company's Redis stream, entry by
// entry, with its id. Exports no longer carry the log (the database's own
// backups do: docs/operators.md); an older export that does is still
// imported, into the database. The rule of a merge is the union: an entry
// is identified by its id (the millisecond it was recorded and a
// sequence), entries the log has are kept as they are, the others are
// added in their place; entries older than the retention are not brought
// back. Importing twice adds nothing the second time.

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

// maxEntryViews bounds an imported entry's before and after: far above what
// a change records (a key's or an endpoint's view, its text bounded), far
// below what would make the log a store of anything.
const maxEntryViews = 64 << 10

var entryID = regexp.MustCompile(`^[0-9]{1,15}-[0-9]{1,19}$`)

// row is the entry as the log's table keeps it; ok is false when it is
// not one (check says why).
func (r EntryRecord) row(company string) (row, bool) {
	seq, ok := seqOf(r.ID)
	ms, err := strconv.ParseInt(r.Fields["time"], 10, 64)
	if !ok || err != nil {
		return row{}, false
	}
	return row{seq: seq, atMs: ms, actor: r.Fields["actor"], action: r.Fields["action"], key: r.Fields["key"],
		webhook: r.Fields["webhook"], before: r.Fields["before"], after: r.Fields["after"], company: company}, true
}

// check refuses an entry that Record would not have made.
func (r EntryRecord) check(company string) error {
	bad := func(what string) error {
		return fmt.Errorf("%w: company %s, entry %s: %s", ErrInvalidState, company, invoicing.Clip(r.ID), what)
	}
	if _, ok := seqOf(r.ID); !entryID.MatchString(r.ID) || !ok {
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
