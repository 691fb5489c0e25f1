package events

import (
	"context"
	"errors"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// targets are the endpoints of a mode, by company, as the detector routes
// events to them. They are read again only when an endpoint changed (the
// version counter every change moves), so that a tick costs one GET.
type targets struct {
	version   string
	companies []string // sorted
	byCompany map[string][]Webhook
}

// route is the endpoints ev goes to: the company's, subscribed to its type,
// created by the time of the change (nothing older than an endpoint is sent
// to it) and not expired.
func (t *targets) route(ev *Event) []string {
	var out []string
	for i := range t.byCompany[ev.CompanyID] {
		e := &t.byCompany[ev.CompanyID][i]
		if e.Wants(ev.Type) && !e.CreatedAt.After(ev.Time) && (e.ExpiresAt == nil || e.ExpiresAt.After(ev.Time)) {
			out = append(out, e.ID)
		}
	}
	return out
}

// routeAll pairs each event with its endpoints, leaving out events no
// endpoint wants unless all (the feed records every event).
func (t *targets) routeAll(evs []Event, all bool) []queued {
	var out []queued
	for i := range evs {
		if eps := t.route(&evs[i]); len(eps) > 0 || all {
			out = append(out, queued{ev: evs[i], eps: eps})
		}
	}
	return out
}

// loadTargets reads the mode's endpoints unless the version says that
// nothing changed since cur was read.
func (es *Webhooks) loadTargets(ctx context.Context, m invoicing.Mode, cur *targets) (*targets, error) {
	v, err := es.rdb.Get(ctx, es.l.version()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(err)
	}
	if cur != nil && cur.version == v {
		return cur, nil
	}
	companies, err := es.rdb.SMembers(ctx, es.l.companies(m)).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	slices.Sort(companies)
	t := &targets{version: v, companies: companies, byCompany: make(map[string][]Webhook, len(companies))}
	// Two round trips whatever the number of companies: their sets of ids,
	// then every endpoint.
	pipe := es.rdb.Pipeline()
	sets := make([]*redis.StringSliceCmd, len(companies))
	for i, c := range companies {
		sets[i] = pipe.SMembers(ctx, es.l.endpoints(m, c))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, unavailable(err)
	}
	var ids []string
	for _, cmd := range sets {
		ids = append(ids, cmd.Val()...)
	}
	eps, err := es.endpointsByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, e := range eps {
		t.byCompany[e.CompanyID] = append(t.byCompany[e.CompanyID], e)
	}
	return t, nil
}
