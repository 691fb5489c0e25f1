package history

import (
	"errors"
	"fmt"
	"sort"

	"github.com/invoicing-ao/gateway/invoicing"
)

// What Record decides, the same on both engines: from the batch, the
// feeds' heads (locked), the marks of the batch's ids and the deliveries
// its re-found events have, the rows to write. Each engine reads and
// writes them its own way (PostgreSQL in arrays and pipelined batches).

type feedKey struct {
	company string
	mode    invoicing.Mode
}

type markKey struct {
	company string
	mode    invoicing.Mode
	id      string
}

// mark is when an id was found first, and its event's seq.
type mark struct{ ms, seq int64 }

type delKey struct{ company, endpoint, id string }

type eventRow struct {
	feedKey
	seq               int64
	id, typ, resource string
	body              []byte
}

type markRow struct {
	markKey
	ms, seq int64
}

type deliveryRow struct {
	company, endpoint, id string
	mode                  invoicing.Mode
	typ, resource, cause  string
	queued, seq           int64
	body                  []byte // own body ("" : its event's)
}

// headMove is a feed's head after the batch: its last seq and how many
// events the batch added.
type headMove struct{ last, added int64 }

type plan struct {
	events     []eventRow
	marks      []markRow
	deliveries []deliveryRow
	heads      map[feedKey]headMove
	fresh      []bool
}

// maxBatch bounds a batch: a step's page of changes.
const maxBatch = 5000

// checkBatch refuses a batch no detector makes: the program's mistake,
// not a caller's input.
func checkBatch(b Batch) error {
	if b.Move.Stream != "" && (!b.Move.Mode.Valid() || b.Move.Next == "") {
		return errors.New("history: a watermark's move needs a mode and where it moves to")
	}
	if len(b.Events) > maxBatch {
		return fmt.Errorf("history: a batch of %d events is over %d", len(b.Events), maxBatch)
	}
	for i, ev := range b.Events {
		switch {
		case !canonicalID(ev.CompanyID):
			return fmt.Errorf("history: event %d: company id %q is not a canonical UUID", i, invoicing.Clip(ev.CompanyID))
		case !ev.Mode.Valid():
			return fmt.Errorf("history: event %d: no mode", i)
		case ev.ID == "" || len(ev.ID) > 64 || ev.Type == "" || len(ev.Type) > 64:
			return fmt.Errorf("history: event %d: needs an id and a type", i)
		case len(ev.Body) < 2 || ev.Body[0] != '{' || ev.Body[len(ev.Body)-1] != '}':
			return fmt.Errorf("history: event %s: its body is not a JSON object", ev.ID)
		}
		for _, ep := range ev.Endpoints {
			if ep == "" || len(ep) > 64 {
				return fmt.Errorf("history: event %s: an endpoint id is empty or too long", ev.ID)
			}
		}
	}
	return nil
}

// canonicalID reports whether s is a company id in its canonical form.
func canonicalID(s string) bool {
	c, ok := invoicing.CanonicalUUID(s)
	return ok && c == s
}

// feedsOf are the batch's feeds, in the order their heads are locked
// (company, then mode), so that two writers never wait for each other.
func feedsOf(b Batch) []feedKey {
	seen := map[feedKey]bool{}
	var out []feedKey
	for _, ev := range b.Events {
		k := feedKey{ev.CompanyID, ev.Mode}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].company != out[j].company {
			return out[i].company < out[j].company
		}
		return out[i].mode < out[j].mode
	})
	return out
}

// markKeys are the batch's ids, once each.
func markKeys(b Batch) []markKey {
	seen := map[markKey]bool{}
	var out []markKey
	for _, ev := range b.Events {
		k := markKey{ev.CompanyID, ev.Mode, ev.ID}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// young reports whether a mark made at ms (now ms) still lets its event be
// queued for an endpoint that has none of it.
func (c *core) young(m mark, now int64) bool { return m.ms >= c.kept(now) }

// refoundKeys are the deliveries re-found events could get: for each
// endpoint of an event marked young enough. Record reads which of them
// exist.
func (c *core) refoundKeys(b Batch, marks map[markKey]mark, now int64) []delKey {
	var out []delKey
	seen := map[delKey]bool{}
	for _, ev := range b.Events {
		m, ok := marks[markKey{ev.CompanyID, ev.Mode, ev.ID}]
		if !ok || !c.young(m, now) {
			continue
		}
		for _, ep := range ev.Endpoints {
			k := delKey{ev.CompanyID, ep, ev.ID}
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// plan decides the batch's rows. heads are the feeds' last seqs, marks
// those of the batch's ids found before, existing the deliveries of
// refoundKeys that exist.
func (c *core) plan(b Batch, heads map[feedKey]int64, marks map[markKey]mark, existing map[delKey]bool, now int64) plan {
	p := plan{heads: map[feedKey]headMove{}, fresh: make([]bool, len(b.Events))}
	for k, last := range heads {
		p.heads[k] = headMove{last: last}
	}
	inBatch := map[markKey]mark{}
	if existing == nil {
		existing = map[delKey]bool{}
	}
	for i, ev := range b.Events {
		fk, mk := feedKey{ev.CompanyID, ev.Mode}, markKey{ev.CompanyID, ev.Mode, ev.ID}
		m, marked := marks[mk]
		if !marked {
			m, marked = inBatch[mk]
		}
		ownBody := false
		switch {
		case !marked:
			h := p.heads[fk]
			h.last = max(h.last+1, now*1000)
			h.added++
			p.heads[fk] = h
			m = mark{ms: now, seq: h.last}
			inBatch[mk] = m
			p.fresh[i] = true
			p.events = append(p.events, eventRow{feedKey: fk, seq: m.seq, id: ev.ID, typ: ev.Type, resource: ev.ResourceID, body: ev.Body})
			p.marks = append(p.marks, markRow{markKey: mk, ms: now, seq: m.seq})
		case c.young(m, now):
			// Found again: its own body, since its feed row may be of an
			// older partition than its mark, or gone.
			ownBody = true
		default:
			continue
		}
		for _, ep := range ev.Endpoints {
			k := delKey{ev.CompanyID, ep, ev.ID}
			if existing[k] {
				continue
			}
			existing[k] = true
			d := deliveryRow{company: ev.CompanyID, endpoint: ep, id: ev.ID, mode: ev.Mode, typ: ev.Type, resource: ev.ResourceID,
				cause: ev.Cause, queued: now, seq: m.seq}
			if ownBody {
				d.body = ev.Body
			}
			p.deliveries = append(p.deliveries, d)
		}
	}
	return p
}

// recorded is the plan's result, once written.
func (p plan) recorded() Recorded {
	r := Recorded{New: p.fresh, Deliveries: make([]Queued, 0, len(p.deliveries))}
	for _, d := range p.deliveries {
		r.Deliveries = append(r.Deliveries, Queued{CompanyID: d.company, EndpointID: d.endpoint, EventID: d.id, QueuedMs: d.queued, DueMs: d.queued})
	}
	return r
}
