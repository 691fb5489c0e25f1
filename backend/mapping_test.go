package backend

import (
	"errors"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

func TestNormalizePhone(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"+244923456789":    "+244923456789",
		"923456789":        "+244923456789",
		"923 456 789":      "+244923456789",
		"+244 923 456 789": "+244923456789",
		"222123456":        "+244222123456", // a landline is Angolan too
		"+351912345678":    "+351912345678", // foreign: as stored
		"+351 912 345 678": "+351 912 345 678",
		"92345678":         "92345678", // 8 digits
		"9234567890":       "9234567890",
		"923-456-789":      "923-456-789",
		"+24492345678a":    "+24492345678a",
		"":                 "",
	}
	for in, want := range cases {
		if got := normalizePhone(in); got != want {
			t.Errorf("normalizePhone(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNormalizeNIF(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"5417001234":       "5417001234",
		" 541 700 1234 ":   "5417001234",
		"000238553ca017":   "000238553CA017",
		"000238553 CA 017": "000238553CA017",
		"   ":              "",
	}
	for in, want := range cases {
		if got := normalizeNIF(in); got != want {
			t.Errorf("normalizeNIF(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClientType(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	cases := []struct {
		kind *string
		want string
	}{{s("C"), "COMPANY"}, {s("I"), "INDIVIDUAL"}, {nil, "<nil>"}, {s("X"), "<nil>"}}
	for _, tc := range cases {
		got := "<nil>"
		if ty := clientType(tc.kind); ty != nil {
			got = *ty
			back, err := kindOf(ty)
			if err != nil || *back != *tc.kind {
				t.Errorf("kindOf(%s) = %v, %v", *ty, back, err)
			}
		}
		if got != tc.want {
			t.Errorf("clientType(%v) = %s, want %s", tc.kind, got, tc.want)
		}
	}
	if _, err := kindOf(s("company")); !errors.Is(err, ErrInvalid) {
		t.Errorf("kindOf(company): %v", err)
	}
}

func TestInvoiceStatus(t *testing.T) {
	t.Parallel()
	d := func(v string) *string { return &v }
	cases := []struct {
		typ, state string
		due        *string
		want       string
	}{
		{"FT", "draft", d("2020-01-01"), "DRAFT"},
		{"FT", "paid", d("2020-01-01"), "PAID"},
		{"FT", "cancelled", nil, "CANCELLED"},
		{"FT", "issued", nil, "ISSUED"},
		{"FT", "issued", d("2026-03-10"), "ISSUED"}, // due today is not late
		{"FT", "issued", d("2026-03-09"), "OVERDUE"},
		{"FT", "issued", d("2026-03-11"), "ISSUED"},
		{"FT", "issued", d("2025-12-31"), "OVERDUE"},
		{"ND", "issued", d("2026-03-09"), "OVERDUE"},
		// Only a late payment is overdue: a proforma asks for none, a credit
		// note owes the customer, FR and FS are paid when issued.
		{"PF", "issued", d("2026-03-09"), "ISSUED"},
		{"NC", "issued", d("2026-03-09"), "ISSUED"},
		{"FR", "issued", d("2026-03-09"), "ISSUED"},
		{"FS", "issued", d("2026-03-09"), "ISSUED"},
		{"PF", "draft", d("2026-03-09"), "DRAFT"},
	}
	for _, tc := range cases {
		got, err := invoiceStatus(tc.typ, tc.state, tc.due, "2026-03-10")
		if err != nil || got != tc.want {
			t.Errorf("invoiceStatus(%s, %s, %v) = %s, %v; want %s", tc.typ, tc.state, tc.due, got, err, tc.want)
		}
	}
	if _, err := invoiceStatus("FT", "archived", nil, "2026-03-10"); err == nil {
		t.Error("unknown state accepted")
	}
}

func TestCanonicalDecimal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in    string
		scale int
		want  invoicing.Decimal
	}{
		{"1500.00", moneyScale, "1500.00"},
		{"1500", moneyScale, "1500.00"},
		{"1500.5", moneyScale, "1500.50"},
		{"12345678901234.56", moneyScale, "12345678901234.56"},
		{"99999999999999999.99", moneyScale, "99999999999999999.99"}, // beyond float64 precision
		{"-5.00", moneyScale, "-5.00"},
		{"-0.00", moneyScale, "0.00"},
		{"0.00", moneyScale, "0.00"},
		{"007.10", moneyScale, "7.10"},
		{"1.005", moneyScale, "1.005"}, // never rounded away
		{"12.3456", priceMinScale, "12.3456"},
		{"750.0000", priceMinScale, "750.00"},
		{"10.5000", priceMinScale, "10.50"},
		{"0.1230", priceMinScale, "0.123"},
		{"2.000", qtyMinScale, "2"},
		{"1.500", qtyMinScale, "1.5"},
		{"0.125", qtyMinScale, "0.125"},
		{"0.000", qtyMinScale, "0"},
		{"10", qtyMinScale, "10"},
	}
	for _, tc := range cases {
		got, err := canonicalDecimal(tc.in, tc.scale)
		if err != nil || got != tc.want {
			t.Errorf("canonicalDecimal(%q, %d) = %q, %v; want %q", tc.in, tc.scale, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "-", ".5", "1e5", "1,5", "NaN", "1.2.3", " 1", "+1"} {
		if got, err := canonicalDecimal(bad, 2); err == nil {
			t.Errorf("canonicalDecimal(%q) = %q, want an error", bad, got)
		}
	}
}

func TestTransmission(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	at := time.Date(2026, 3, 2, 10, 0, 0, 500e6, time.UTC)
	cases := []struct {
		name    string
		docType string
		sub     *submission
		status  string
		errs    int
	}{
		{"PF never sent", "PF", nil, "NOT_APPLICABLE", 0},
		{"PF with a row", "PF", &submission{Status: s("V"), SubmittedAt: at}, "NOT_APPLICABLE", 0},
		{"no row", "FT", nil, "NOT_SENT", 0},
		{"not validated", "FT", &submission{SubmittedAt: at}, "PENDING", 0},
		{"valid", "FT", &submission{Status: s("V"), SubmittedAt: at}, "VALID", 0},
		{"invalid", "FR", &submission{Status: s("I"), SubmittedAt: at,
			Errors: s(`[{"idError":"E11","descriptionError":"NIF inválido"},{"idError":7,"descriptionError":"x"}]`)}, "INVALID", 2},
		{"invalid without list", "FT", &submission{Status: s("I"), SubmittedAt: at}, "INVALID", 0},
	}
	for _, tc := range cases {
		got, err := transmission(tc.docType, tc.sub)
		if err != nil || got.Status != tc.status || len(got.Errors) != tc.errs || got.Errors == nil {
			t.Errorf("%s: %+v, %v; want %s with %d errors", tc.name, got, err, tc.status, tc.errs)
		}
	}
	got, _ := transmission("FT", &submission{Status: s("I"), SubmittedAt: at,
		Errors: s(`[{"idError":7,"descriptionError":"x"}]`)})
	if got.Errors[0] != (invoicing.TransmissionError{Code: "7", Message: "x"}) {
		t.Errorf("numeric idError: %+v", got.Errors[0])
	}
	if _, err := transmission("FT", &submission{Status: s("I"), SubmittedAt: at, Errors: s(`{not json`)}); err == nil {
		t.Error("malformed errors accepted")
	}
	if _, err := transmission("FT", &submission{Status: s("X"), SubmittedAt: at}); err == nil {
		t.Error("unknown status accepted")
	}
}

func TestLuandaDays(t *testing.T) {
	t.Parallel()
	cases := []struct {
		now  time.Time
		want string
	}{
		{time.Date(2026, 3, 10, 22, 59, 59, 0, time.UTC), "2026-03-10"},
		{time.Date(2026, 3, 10, 23, 0, 0, 0, time.UTC), "2026-03-11"},
		{time.Date(2026, 12, 31, 23, 30, 0, 0, time.UTC), "2027-01-01"},
	}
	for _, tc := range cases {
		if got := today(tc.now); got != tc.want {
			t.Errorf("today(%s) = %s, want %s", tc.now, got, tc.want)
		}
	}
	start, err := dayStart("2026-03-01")
	if err != nil || !start.Equal(time.Date(2026, 2, 28, 23, 0, 0, 0, time.UTC)) {
		t.Errorf("dayStart = %s, %v", start, err)
	}
	for _, bad := range []string{"2026-02-30", "2026-3-1", "20260301", "", "2026-03-01T00:00:00Z"} {
		if _, err := dayStart(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("dayStart(%q): %v", bad, err)
		}
	}
}

func TestEscapeLikeAndRebind(t *testing.T) {
	t.Parallel()
	if got := escapeLike(`50%_a\b`); got != `50\%\_a\\b` {
		t.Errorf("escapeLike = %s", got)
	}
	if got := dollarRebind("a = ? AND b IN (?, ?)"); got != "a = $1 AND b IN ($2, $3)" {
		t.Errorf("dollarRebind = %s", got)
	}
}

func TestSQLiteTimeRoundTrip(t *testing.T) {
	t.Parallel()
	in := time.Date(2026, 3, 1, 9, 15, 2, 120_000_000, time.FixedZone("x", 3600))
	s := formatSQLiteTime(in)
	if s != "2026-03-01T08:15:02.120000Z" {
		t.Fatalf("format = %s", s)
	}
	out, err := parseSQLiteTime(s)
	if err != nil || !out.Equal(in) {
		t.Fatalf("parse = %s, %v", out, err)
	}
	if _, err := parseSQLiteTime("2026-03-01T08:15:02.12Z"); err == nil {
		t.Fatal("short fraction accepted: text order would break")
	}
}
