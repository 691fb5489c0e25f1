package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/client"
)

// Amounts the generated types must keep digit for digit: 12345678901234.56
// (16 significant digits, more than a float64 is sure to keep), and unit
// prices with 4 decimals, one with more digits than a float64 holds.
const (
	bigTotal = "12345678901234.56"
	fineUnit = "1234.5678"          // 8 significant digits: more than a float32 holds
	hugeUnit = "9007199254740.9993" // 17 significant digits
)

// The values are ones a float would change: the test would mean nothing
// otherwise (float32 is what oapi-codegen made of money before).
func TestMoneyValuesNeedExactness(t *testing.T) {
	t.Parallel()
	for _, s := range []string{bigTotal, fineUnit} {
		f, _ := strconv.ParseFloat(s, 32)
		if strconv.FormatFloat(float64(float32(f)), 'f', -1, 32) == s {
			t.Errorf("%s survives float32", s)
		}
	}
	if f, _ := strconv.ParseFloat(hugeUnit, 64); strconv.FormatFloat(f, 'f', 4, 64) == hugeUnit {
		t.Errorf("%s survives float64", hugeUnit)
	}
}

// Through a real gateway and back: the generated types hold the exact
// digits, and encode them again as the same JSON numbers.
func TestMoneyRoundTripsExactly(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	id := uuid.New()
	issued := time.Date(2026, 3, 1, 9, 15, 2, 120_000_000, time.UTC)
	doc := gendata.Document{
		ID: id.String(), CompanyID: gendata.DemoCompanyA, DocType: "FT", Series: "2026", Seq: 990001, State: "issued",
		CustomerName: "Consumidor final", Currency: "AOA", NetTotal: bigTotal, TaxTotal: "0.00", GrossTotal: bigTotal,
		IssuedAt: &issued, DueDate: gendata.Ptr("2026-03-31"), CreatedAt: issued,
		Lines: []gendata.Line{
			{LineNo: 1, Description: "Obra", Quantity: "1.000", UnitPrice: "12345678901234.5600", TaxRate: "0.00", LineTotal: bigTotal},
			{LineNo: 2, Description: "Parafusos", Quantity: "1.500", UnitPrice: fineUnit, TaxRate: "14.00", LineTotal: "1851.85"},
			{LineNo: 3, Description: "Cabo", Quantity: "0.125", UnitPrice: hugeUnit, TaxRate: "0.00", LineTotal: "1125899906842.62"},
		},
	}
	if err := gendata.Write(context.Background(), g.live, &gendata.Dataset{Documents: []gendata.Document{doc}}); err != nil {
		t.Fatal(err)
	}
	a := g.api(t, client.Config{})
	inv, err := a.GetInvoice(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ got, want client.Money }{
		{inv.TotalAmount, bigTotal},
		{inv.Items[0].UnitPrice, bigTotal},
		{inv.Items[0].Total, bigTotal},
		{inv.Items[1].UnitPrice, fineUnit},
		{inv.Items[1].Quantity, "1.5"},
		{inv.Items[2].UnitPrice, hugeUnit},
		{inv.Items[2].Quantity, "0.125"},
		{inv.Items[2].Total, "1125899906842.62"},
	}
	for i, w := range want {
		if w.got != w.want {
			t.Errorf("value %d: %s, want %s", i, w.got, w.want)
		}
	}
	out, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"totalAmount":` + bigTotal, `"unitPrice":` + hugeUnit, `"unitPrice":` + fineUnit, `"quantity":1.5`} {
		if !bytes.Contains(out, []byte(s)) {
			t.Errorf("encoded again, %s is lost: %s", s, out)
		}
	}
	// And through a list.
	for got, err := range a.Invoices(context.Background(), client.ListInvoicesParams{Type: ptr(client.FT)}) {
		if err != nil {
			t.Fatal(err)
		}
		if got.Id == id && (got.TotalAmount != bigTotal || got.Items[2].UnitPrice != hugeUnit) {
			t.Errorf("listed: %s, %s", got.TotalAmount, got.Items[2].UnitPrice)
		}
	}
}
