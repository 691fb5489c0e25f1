package gateway

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

func sp(s string) *string { return &s }

// tricky strings: every escaping rule of encoding/json.
var trickyStrings = []string{
	"", "plain", "Conceição & Filhos <Lda>", `quote " backslash \ slash /`,
	"ctl \x00\x01\x08\x0c\n\r\t\x1f\x7f end", "line sep \u2028 para \u2029", "bad utf8 \xff\xfe \xc3",
	"emoji 🧾 ação", "ends with bad \xe2\x82",
}

func sampleValues() []any {
	at := invoicing.Timestamp{Time: time.Date(2026, 3, 1, 9, 15, 2, 123456789, time.FixedZone("WAT", 3600))}
	var vals []any
	for _, s := range trickyStrings {
		c := invoicing.Client{ID: "11000000-0000-4000-8000-000000000001", Name: s, NIF: sp(s), Email: sp("a@b.ao"),
			Phone: nil, Address: sp(s), Type: sp("COMPANY"), CreatedAt: at}
		inv := invoicing.Invoice{ID: "21000000-0000-4000-8000-000000000001", Number: "FT 2026/1", Type: "FT", Status: "ISSUED",
			TotalAmount: "12345678901234.56", Currency: "AOA", IssuedAt: &at, DueDate: sp("2026-03-31"),
			Customer: invoicing.InvoiceCustomer{ID: sp("x"), Name: s, NIF: nil},
			Items:    []invoicing.InvoiceItem{{Description: s, Quantity: "2.5", UnitPrice: "12500.0000", Total: "31250.00"}, {Description: "b", Quantity: "1", UnitPrice: "1.00", Total: ""}},
			Transmission: &invoicing.Transmission{Status: "INVALID", RequestID: sp(s), SubmittedAt: &at, CheckedAt: nil,
				Errors: []invoicing.TransmissionError{{Code: "E1", Message: s}, {Code: "E2", Message: "ok"}}},
		}
		draft := invoicing.Invoice{ID: "d", Number: "PF A/2", Type: "PF", Status: "DRAFT", TotalAmount: "0.00", Currency: "AOA",
			Items: []invoicing.InvoiceItem{}, Transmission: &invoicing.Transmission{Status: "NOT_APPLICABLE", Errors: []invoicing.TransmissionError{}}}
		vals = append(vals, c, inv, draft, invoicing.Invoice{},
			listPage[invoicing.Client]{invoicing.Page[invoicing.Client]{Data: []invoicing.Client{c, {}}, Total: 1_000_001, Page: 3, PageSize: 100}, sp("AQGxk-_x")},
			listPage[invoicing.Invoice]{invoicing.Page[invoicing.Invoice]{Data: []invoicing.Invoice{inv, draft}, Total: 2, Page: 1, PageSize: 20}, nil},
		)
	}
	vals = append(vals, listPage[invoicing.Client]{Page: invoicing.Page[invoicing.Client]{Data: []invoicing.Client{}}}, listPage[invoicing.Invoice]{},
		listPage[invoicing.Client]{})
	return vals
}

// The appenders write exactly encoding/json's bytes.
func TestAppendJSONEqualsEncodingJSON(t *testing.T) {
	t.Parallel()
	for i, v := range sampleValues() {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got := appendJSON(nil, v)
		if !bytes.Equal(got, want) {
			t.Errorf("value %d (%T):\n got %s\nwant %s", i, v, got, want)
		}
	}
	if appendJSON(nil, map[string]string{}) != nil {
		t.Error("appendJSON took a type it does not know")
	}
}

func TestAppendStringRandom(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		n := r.IntN(12)
		buf := make([]byte, n)
		for j := range buf {
			buf[j] = byte(r.IntN(256))
			if r.IntN(3) == 0 {
				buf[j] = "<>&\"\\\n\u2028é"[r.IntN(11)]
			}
		}
		s := string(buf)
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s want %s", s, got, want)
		}
	}
}

// appendMillis writes what AppendFormat writes, for any instant, in any zone.
func TestAppendMillis(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 50000; i++ {
		at := time.Unix(r.Int64N(400_000_000_000)-62_000_000_000, r.Int64N(1e9)).In(time.FixedZone("Z", 3600*(r.IntN(25)-12)))
		if i%1000 == 0 {
			at = time.Date(-1+r.IntN(3)*10001, 1, 1, 0, 0, 0, 0, time.UTC) // the fallback's years
		}
		want := append(append([]byte{'"'}, at.UTC().Format("2006-01-02T15:04:05.000Z")...), '"')
		if got := appendMillis(nil, at.UTC()); !bytes.Equal(got, want) {
			t.Fatalf("%v: got %s want %s", at, got, want)
		}
	}
}

// A field added to a resource type must be added to the appenders too.
func TestAppendJSONKnowsEveryField(t *testing.T) {
	t.Parallel()
	for typ, n := range map[reflect.Type]int{
		reflect.TypeFor[invoicing.Client]():                 9,
		reflect.TypeFor[invoicing.Invoice]():                12,
		reflect.TypeFor[invoicing.InvoiceCustomer]():        3,
		reflect.TypeFor[invoicing.InvoiceItem]():            4,
		reflect.TypeFor[invoicing.Transmission]():           5,
		reflect.TypeFor[invoicing.TransmissionError]():      2,
		reflect.TypeFor[invoicing.Page[invoicing.Client]](): 5, // Next: written as nextCursor
		reflect.TypeFor[listPage[invoicing.Client]]():       2,
	} {
		if typ.NumField() != n {
			t.Errorf("%v has %d fields, the appenders in encode.go know %d: update them", typ, typ.NumField(), n)
		}
	}
}
