package backend

import (
	"context"
	"fmt"
	"strings"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Bounds of one CompanyQuery.
const (
	MaxCompanyIDs   = 100
	MaxCompanyLimit = 1000
)

// SearchCompanies reads the platform's companies for the platform team (the
// admin console shows names where it has ids): a page of those matching q,
// in (name, id) order. A company whose id is malformed is left out, as an
// unknown one is.
func (s *Store) SearchCompanies(ctx context.Context, q invoicing.CompanyQuery) ([]invoicing.Company, error) {
	if q.Limit < 1 || q.Limit > MaxCompanyLimit || len(q.IDs) > MaxCompanyIDs {
		return nil, fmt.Errorf("%w: limit must be 1..%d and ids at most %d", ErrInvalid, MaxCompanyLimit, MaxCompanyIDs)
	}
	var w where
	if q.IDs != nil {
		ids := make([]string, 0, len(q.IDs))
		for _, id := range q.IDs {
			if c, ok := invoicing.CanonicalUUID(id); ok {
				ids = append(ids, c)
			}
		}
		if len(ids) == 0 {
			return []invoicing.Company{}, nil
		}
		w.add(s.d.inIDs("c.id"), s.d.idsArg(ids))
	}
	if q.Search != "" {
		// The clients' search conditions, on the companies' columns.
		nameLike := strings.Replace(s.d.nameLike, "c.name", "c.legal_name", 1)
		name := "%" + escapeLike(strings.ToLower(q.Search)) + "%"
		if nif := normalizeNIF(q.Search); nif != "" {
			w.add("("+nameLike+" OR "+s.d.nifLike+")", name, "%"+escapeLike(nif)+"%")
		} else {
			w.add(nameLike, name)
		}
	}
	if a := q.After; a != nil {
		w.add("(c.legal_name > ? OR (c.legal_name = ? AND c.id > "+s.d.uuidP+"))", a.Name, a.Name, a.ID)
	}
	sql := "SELECT c.id, c.legal_name, c.nif, c.status\nFROM companies c"
	if len(w.conds) > 0 {
		sql += "\nWHERE " + w.sql()
	}
	sql = s.d.rebind(sql + "\nORDER BY c.legal_name, c.id\nLIMIT ?")
	return run(ctx, s.breaker, func() ([]invoicing.Company, error) {
		ctx, cancel := s.deadline(ctx)
		defer cancel()
		rows, err := s.db.reader(settled, "").query(ctx, sql, append(w.args, q.Limit)...)
		if err != nil {
			return nil, s.fail(ctx, "search companies", err)
		}
		defer rows.Close()
		out := []invoicing.Company{}
		for rows.Next() {
			var c invoicing.Company
			if err := rows.Scan(&c.ID, &c.Name, &c.NIF, &c.Status); err != nil {
				return nil, s.fail(ctx, "search companies", err)
			}
			out = append(out, c)
		}
		if err := rows.Err(); err != nil {
			return nil, s.fail(ctx, "search companies", err)
		}
		return out, nil
	})
}
