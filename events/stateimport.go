package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// The rule of a merge: the newer record of an endpoint wins (its
// updatedAt: every change through the admin API moves it, a secret's
// rotation too), Redis's on a tie; an endpoint deleted after the file's
// record was made stays deleted. Health (failing since, last error) goes
// with the record that wins. Importing twice writes nothing the second time.

// ImportPlan is what importing a State will write, worked out before.
type ImportPlan struct {
	es                        *Webhooks
	added, updated, unchanged int
	writes                    []endpointWrite
	rewind                    map[invoicing.Mode]bool
	resume                    map[invoicing.Mode]time.Time // State.ResumeFrom
	overdue                   map[invoicing.Mode]string    // State.OverdueFrom
	taken                     time.Time                    // State.TakenAt
}

type endpointWrite struct {
	id, company string
	mode        invoicing.Mode
	fields      map[string]string // as stored: the secrets sealed
	curCfg      string            // as the plan read them
	curGone     string
}

// Counts are the endpoints added, replaced by newer records, and kept.
func (p *ImportPlan) Counts() (added, updated, unchanged int) { return p.added, p.updated, p.unchanged }

// EachCompany calls f with the endpoints added and replaced in each company
// (for the import's audit entries).
func (p *ImportPlan) EachCompany(f func(company string, added, updated int)) {
	n := map[string]*[2]int{}
	for _, w := range p.writes {
		if n[w.company] == nil {
			n[w.company] = new([2]int)
		}
		if w.curCfg == "" {
			n[w.company][0]++
		} else {
			n[w.company][1]++
		}
	}
	for c, v := range n {
		f(c, v[0], v[1])
	}
}

// PlanImport checks every record of s, reads Redis's and seals the secrets
// with the current key; it writes nothing.
func (es *Webhooks) PlanImport(ctx context.Context, st State) (*ImportPlan, error) {
	if st.Version < 1 || st.Version > StateVersion {
		return nil, fmt.Errorf("%w: version %d of the endpoints, this gateway reads %d", ErrInvalidState, st.Version, StateVersion)
	}
	cfgs := make([]config, len(st.Webhooks))
	seen := map[string]bool{}
	for i, r := range st.Webhooks {
		c, err := r.check()
		if err != nil {
			return nil, err
		}
		if err := es.dest.checkRestoredURL(ctx, c.URL); err != nil {
			return nil, fmt.Errorf("%w: endpoint %s: %s", ErrInvalidState, r.ID, fieldMessage(err))
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("%w: endpoint %s is in the file twice", ErrInvalidState, r.ID)
		}
		seen[r.ID], cfgs[i] = true, c
	}
	for _, sc := range []*redis.Script{importScript, resumeScript, overdueResumeScript, resumedScript} {
		if err := sc.Load(ctx, es.rdb).Err(); err != nil {
			return nil, unavailable(err)
		}
	}
	p := &ImportPlan{es: es, rewind: map[invoicing.Mode]bool{}, resume: st.ResumeFrom, overdue: st.OverdueFrom, taken: st.TakenAt}
	now := es.now()
	for i, r := range st.Webhooks {
		c := cfgs[i]
		if c.ExpiresAt != nil && !c.ExpiresAt.After(now) {
			p.unchanged++ // a temporary endpoint whose time is over
			continue
		}
		w, keep, err := es.planEndpoint(ctx, r, c)
		if err != nil {
			return nil, err
		}
		switch {
		case keep:
			p.unchanged++
			continue
		case w.curCfg == "":
			p.added++
		default:
			p.updated++
		}
		p.writes, p.rewind[c.Mode] = append(p.writes, w), true
	}
	return p, nil
}

// planEndpoint reads Redis's copy of an endpoint and decides: keep it
// (newer, or deleted later), or write the file's, sealed.
func (es *Webhooks) planEndpoint(ctx context.Context, r WebhookRecord, c config) (endpointWrite, bool, error) {
	pipe := es.rdb.Pipeline()
	curCmd := pipe.HGet(ctx, es.l.endpoint(r.ID), "cfg")
	goneCmd := pipe.Get(ctx, es.l.deleted(r.ID))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return endpointWrite{}, false, unavailable(err)
	}
	w := endpointWrite{id: r.ID, company: c.CompanyID, mode: c.Mode, curCfg: curCmd.Val(), curGone: goneCmd.Val()}
	at := c.UpdatedAt.UnixMilli()
	if gone, err := strconv.ParseInt(w.curGone, 10, 64); err == nil && gone >= at {
		return w, true, nil
	}
	if w.curCfg != "" {
		var cur config
		if err := json.Unmarshal([]byte(w.curCfg), &cur); err == nil && cur.UpdatedAt.UnixMilli() >= at {
			return w, true, nil
		}
	}
	for i, sec := range c.Secrets {
		sealed, err := es.sealer.Seal(sec.Secret)
		if err != nil {
			return w, false, fmt.Errorf("events: sealing endpoint %s's secret: %w", r.ID, err)
		}
		c.Secrets[i].Secret = sealed
	}
	cfg, _ := json.Marshal(c)
	w.fields = maps.Clone(r.Fields)
	w.fields["cfg"] = string(cfg)
	return w, false, nil
}

// Queue adds the plan's writes to pipe (the endpoints have one phase, 0),
// then moves detection back in each mode an endpoint was restored in: to
// the export's resume point where it has one (resume.go), else over the
// recovery window.
func (p *ImportPlan) Queue(ctx context.Context, phase int, pipe redis.Pipeliner) {
	if phase != 0 {
		return
	}
	l := p.es.l
	for _, w := range p.writes {
		args := []any{w.curCfg, w.curGone, w.id, w.company}
		for f, v := range w.fields {
			args = append(args, f, v)
		}
		keys := []string{l.endpoint(w.id), l.endpoints(w.mode, w.company), l.companies(w.mode), l.version(), l.deleted(w.id)}
		importScript.EvalSha(ctx, pipe, keys, args...)
	}
	for m := range p.rewind {
		at, ok := p.resume[m]
		for _, st := range streams {
			if ok {
				resumeScript.EvalSha(ctx, pipe, []string{l.watermark(m, st.name)}, encodeMark(position(at, "")), at.UnixMicro())
			} else {
				pipe.Set(ctx, l.watermark(m, st.name), markRewind, 0)
			}
		}
		if ok {
			keep, since := p.es.recovery+p.es.sweep, int64(0)
			if !p.taken.IsZero() {
				since = p.taken.UnixMicro()
			}
			resumedScript.EvalSha(ctx, pipe, []string{l.resumed(m)}, at.UnixMicro(), since, keep.Milliseconds())
		} else {
			pipe.Del(ctx, l.resumed(m)) // a rewind reads the whole window again
		}
		if due, ok := p.overdue[m]; ok {
			overdueResumeScript.EvalSha(ctx, pipe, []string{l.watermark(m, "overdue")}, due)
		} else {
			pipe.Set(ctx, l.watermark(m, "overdue"), markRewind, 0)
		}
	}
}

// Detection is where detection resumes in each mode the import restores
// endpoints in: the export's resume point, or zero where it has none (the
// recovery window is read back).
func (p *ImportPlan) Detection() map[invoicing.Mode]time.Time {
	out := make(map[invoicing.Mode]time.Time, len(p.rewind))
	for m := range p.rewind {
		out[m] = p.resume[m]
	}
	return out
}
