package audit

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// BenchmarkRecord records entries of a key's creation (its view after, as
// the admin API records it: about 400 bytes of JSON) for 100 companies, on
// each engine, and reports the bytes on disk per entry (PostgreSQL: the
// entries' partitions and their indexes; SQLite: the file). The tests
// assert no timing; docs/operators.md quotes the figures.
//
//	go test ./audit -run '^$' -bench Record -benchtime 20000x
func BenchmarkRecord(b *testing.B) {
	view, _ := json.Marshal(map[string]any{"id": "key_0123456789abcdefghij", "companyId": companyA, "mode": "LIVE",
		"name": "ERP nightly sync", "scopes": []string{"invoices:read", "clients:read", "clients:write"}, "hint": "igw_live_…x9Qa",
		"state": "active", "createdAt": "2026-03-10T12:00:00Z", "expiresAt": nil, "lastUsedAt": nil, "allowedCidrs": []string{"10.0.0.0/8"},
		"replaces": nil, "replacedBy": nil, "revokedAt": nil})
	for _, engine := range []string{"postgres", "sqlite"} {
		b.Run(engine, func(b *testing.B) {
			url := "sqlite:" + filepath.Join(b.TempDir(), "audit.db")
			if engine == "postgres" {
				url = testenv.Postgres(b)
			}
			db, err := sqldb.Open(ctx, sqldb.Config{URL: url})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Apply(ctx, Migrations()); err != nil {
				b.Fatal(err)
			}
			clock := newClock()
			l := New(Config{DB: db, Now: clock.Now})
			if _, err := l.Maintain(ctx); err != nil { // the partitions, outside the timing
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				clock.Add(time.Millisecond)
				e := Entry{Actor: "ana@platform", CompanyID: fmt.Sprintf("0a1b2c3d-0000-4000-8000-%012d", i%100),
					Action: ActionKeyCreated, KeyID: "key_0123456789abcdefghij", After: view}
				if _, err := l.Record(ctx, e); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
			size := "SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits WHERE inhparent = 'audit_entries'::regclass"
			if engine == "sqlite" {
				size = "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
			}
			var bytes int64
			if err := sqldb.QueryRow(ctx, db.Read(), size, nil, &bytes); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(bytes)/float64(b.N), "disk-bytes/entry")
		})
	}
}
