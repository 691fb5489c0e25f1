package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	auditlog "github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/state"
)

// An import's record in the audit log: one state.imported entry in each
// company it changes, by whoever ran it, with what it added and updated
// there, part by part, and whether its file was signed. The entries are
// written with the import's writes (state.Config.Audit): an import is in
// the log if and only if it is in Redis.

// importedView is what a state.imported entry keeps (its after).
type importedView struct {
	ExportedAt time.Time      `json:"exportedAt"`
	Gateway    string         `json:"gateway"`
	Signed     bool           `json:"signed"`
	Keys       *importedCount `json:"keys,omitempty"`
	Limits     *importedCount `json:"limits,omitempty"`
	Webhooks   *importedCount `json:"webhooks,omitempty"`
	Audit      *importedCount `json:"audit,omitempty"`
}

// importedCount is a part's records added and updated in a company.
type importedCount struct {
	Added   int `json:"added"`
	Updated int `json:"updated"`
}

// importAudit makes state.Config.Audit for an import by actor: the plan of
// its entries, and the number of companies it records the import in
// (*recorded, once planned).
func importAudit(d *deps, actor string, recorded *int) func(context.Context, state.Report) (state.Plan, error) {
	return func(ctx context.Context, r state.Report) (state.Plan, error) {
		entries := importEntries(r, actor)
		*recorded = len(entries)
		return d.audit.PlanEntries(ctx, entries)
	}
}

// importEntries are an import's audit entries, company by company, in the
// order of their ids.
func importEntries(r state.Report, actor string) []auditlog.Entry {
	companies := make([]string, 0, len(r.Companies))
	for c := range r.Companies {
		companies = append(companies, c)
	}
	sort.Strings(companies)
	out := make([]auditlog.Entry, 0, len(companies))
	for _, c := range companies {
		v := importedView{ExportedAt: r.ExportedAt.UTC(), Gateway: r.Gateway, Signed: r.Signed}
		for part, n := range r.Companies[c] {
			count := &importedCount{Added: n.Added, Updated: n.Updated}
			switch part {
			case "keys":
				v.Keys = count
			case "limits":
				v.Limits = count
			case "webhooks":
				v.Webhooks = count
			case "audit":
				v.Audit = count
			}
		}
		after, _ := json.Marshal(v) // times, strings and numbers
		out = append(out, auditlog.Entry{Actor: actor, CompanyID: c, Action: auditlog.ActionStateImported, After: after})
	}
	return out
}

// importedChange is what `gateway audit` says of a state.imported entry.
func importedChange(ev auditlog.Event) string {
	var v importedView
	if err := json.Unmarshal(ev.After, &v); err != nil {
		return "-"
	}
	var parts []string
	for _, p := range []struct {
		name string
		n    *importedCount
	}{{"keys", v.Keys}, {"limits", v.Limits}, {"webhooks", v.Webhooks}, {"audit entries", v.Audit}} {
		if p.n != nil {
			parts = append(parts, fmt.Sprintf("%s %d added, %d updated", p.name, p.n.Added, p.n.Updated))
		}
	}
	s := "the export of " + v.ExportedAt.UTC().Format(time.RFC3339) + ": " + strings.Join(parts, "; ")
	if !v.Signed {
		s += " (unsigned: --accept-unsigned)"
	}
	return s
}
