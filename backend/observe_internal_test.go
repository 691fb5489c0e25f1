package backend

import "testing"

// A statement's span is named by its operation and first table, a WITH
// statement by the statement its expressions introduce.
func TestSummarize(t *testing.T) {
	t.Parallel()
	for sql, want := range map[string][2]string{
		"SELECT count(*) FROM customers c\nWHERE c.company_id = $1":                                     {"SELECT", "customers"},
		"INSERT INTO customers (id) VALUES ($1)":                                                        {"INSERT", "customers"},
		"WITH m AS MATERIALIZED (SELECT c.* FROM customers c\nWHERE x LIMIT $2)\nSELECT c.id\nFROM m c": {"SELECT", "customers"},
		"WITH a AS (SELECT 1 FROM documents), b AS (SELECT (2) FROM a) UPDATE documents SET x = 1":      {"UPDATE", "documents"},
		"WITH m AS MATERIALIZED(SELECT id FROM customers)SELECT * FROM m":                               {"WITH", "customers"},
		"-- ping": {"--", ""},
	} {
		op, target := summarize(sql)
		if op != want[0] || target != want[1] {
			t.Errorf("summarize(%q) = %q, %q; want %q, %q", sql, op, target, want[0], want[1])
		}
	}
}
