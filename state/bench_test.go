package state_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/state"
	"github.com/invoicing-ao/gateway/tenants"
)

// BenchmarkExportImport measures an export and an import (into an emptied
// prefix, one transaction) of a control plane of 10,000 keys of 1,000
// companies, each with a limit; it reports the file's
// bytes. docs/operators.md ("Backup and restore") quotes it.
func BenchmarkExportImport(b *testing.B) {
	rdb, prefix := testenv.Redis(b)
	p := newPlane(b, rdb, prefix, sealKey(b)) // signed, as every export is
	ctx := context.Background()
	scopes, _ := authz.ParseScopes("invoices:read")
	for c := range 1000 {
		co := fmt.Sprintf("0a5e7c1e-0000-4000-8000-%012d", c)
		for range 10 {
			if _, _, err := p.keys.Create(ctx, authz.NewKey{CompanyID: co, Mode: invoicing.Live, Scopes: scopes, Name: "erp"}); err != nil {
				b.Fatal(err)
			}
		}
		if err := p.limits.SetLimit(ctx, co, invoicing.Live, tenants.Limit{Rate: 100, Burst: 100}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var size int
	var exportTime, importTime time.Duration
	for range b.N {
		start := time.Now()
		file := p.export(state.Sealing{})
		exportTime += time.Since(start)
		size = len(file)
		p.lose()
		start = time.Now()
		if _, err := p.importFile(file, state.Opening{}); err != nil {
			b.Fatal(err)
		}
		importTime += time.Since(start)
	}
	b.ReportMetric(float64(size), "file-bytes")
	b.ReportMetric(exportTime.Seconds()/float64(b.N), "export-s")
	b.ReportMetric(importTime.Seconds()/float64(b.N), "import-s")
}
