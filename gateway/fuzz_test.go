package gateway

// Fuzz targets for the parsers of caller input that need no handler: the
// query string of each list and the create-client body (the Authorization
// header's: web's FuzzBearer). Seeds are in testdata/fuzz/<Name>/ (with the
// regressions the fuzzer found); CI runs each target for a few seconds
// (.ci/run).

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// asProblem asserts err is the HTTP layer's Error with one of the given codes.
func asProblem(t *testing.T, err error, codes ...string) *web.Error {
	t.Helper()
	var e *web.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not a *web.Error", err, err)
	}
	if !slices.Contains(codes, e.Code) {
		t.Fatalf("code %q, want one of %v", e.Code, codes)
	}
	if _, ok := problemTable()[e.Code]; !ok {
		t.Fatalf("code %q is not in the error table", e.Code)
	}
	return e
}

// noControl is the promise made for free text: no C0 or C1 control characters.
// hasHidden: a format character (bidirectional controls, zero-width ones,
// the byte order mark), a line or paragraph separator, a private-use one.
func hasHidden(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co) })
}

func noControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// fuzzCursors reads cursors as a server would, for one fixed list.
var fuzzCursors = cursorKeyring{[]byte("fuzz")}

func readFuzzCursor(c, key string) (*invoicing.Position, bool) {
	return fuzzCursors.decodeCursor(c, cursorScope{company: "c", mode: invoicing.Live, list: "l", filter: key})
}

func FuzzInvoiceFilter(f *testing.F) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	valid := *fuzzCursors.encodeCursor(&invoicing.Position{At: &at, ID: "0a5e7c1e-0000-4000-8000-00000000000a"},
		cursorScope{company: "c", mode: invoicing.Live, list: "l", filter: "status=&type=&from=&to="})
	for _, s := range []string{"", "page=2&pageSize=100", "status=OVERDUE&type=FT&from=2025-01-01&to=2025-12-31",
		"pageSize=101", "page=0", "from=2025-13-01", "to=2024-01-01&from=2025-01-01", "page=1&page=2", "x=1", "%zz",
		"page=+1", "page=1e3", "from=2025-1-1", "status=overdue", strings.Repeat("a", 2049),
		"cursor=" + valid, "cursor=" + valid + "&pageSize=5", "cursor=" + valid + "&page=2", "cursor=" + valid + "&status=PAID",
		"cursor=abc", "updatedSince=2026-03-01T09:00:00Z", "updatedSince=2026-03-01T09:00:00.123+01:00", "updatedSince=yesterday"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		fl, _, err := invoiceFilter(raw, readFuzzCursor)
		if err != nil {
			e := asProblem(t, err, "invalid_parameter")
			if len(e.Fields) == 0 {
				t.Fatalf("invalid_parameter without fields for %q", raw)
			}
			return
		}
		if len(raw) > web.MaxQueryLen {
			t.Fatalf("a %d-byte query was accepted", len(raw))
		}
		if fl.Page < 1 || fl.Page > maxPage || fl.PageSize < 1 || fl.PageSize > maxPageSize {
			t.Fatalf("%q: page %d size %d out of range", raw, fl.Page, fl.PageSize)
		}
		if fl.Status != "" && !slices.Contains(invoiceStatuses, fl.Status) || fl.Type != "" && !slices.Contains(invoiceTypes, fl.Type) {
			t.Fatalf("%q: status %q type %q", raw, fl.Status, fl.Type)
		}
		for _, d := range []string{fl.From, fl.To} {
			if d == "" {
				continue
			}
			if tm, err := time.Parse("2006-01-02", d); err != nil || tm.Format("2006-01-02") != d {
				t.Fatalf("%q: date %q accepted", raw, d)
			}
		}
		if fl.From != "" && fl.To != "" && fl.From > fl.To {
			t.Fatalf("%q: from after to", raw)
		}
		if fl.After != nil && (fl.Page != 1 || !strings.Contains(raw, "cursor")) {
			t.Fatalf("%q: a position at page %d", raw, fl.Page)
		}
	})
}

func FuzzClientFilter(f *testing.F) {
	for _, s := range []string{"", "search=kianda", "search=541+700+0010", "search=%00",
		"search=" + strings.Repeat("a", 101), "search=%20%20x%20", "search=%ff", "pageSize=5&search=a&page=3",
		"search=a&search=b", "search=%25_%5C"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		fl, _, err := clientFilter(raw, readFuzzCursor)
		if err != nil {
			asProblem(t, err, "invalid_parameter")
			return
		}
		if fl.Page < 1 || fl.Page > maxPage || fl.PageSize < 1 || fl.PageSize > maxPageSize {
			t.Fatalf("%q: page %d size %d out of range", raw, fl.Page, fl.PageSize)
		}
		s := fl.Search
		if !utf8.ValidString(s) || !noControl(s) || utf8.RuneCountInString(s) > maxSearchLen || strings.TrimSpace(s) != s {
			t.Fatalf("%q: search %q accepted", raw, s)
		}
	})
}

func FuzzDecodeNewClient(f *testing.F) {
	for _, s := range []string{
		`{"name":"Kianda Lda","nif":"541 700 0010","email":"a@b.ao","phone":"+244 923 456 789","address":"Rua 1\nLuanda","type":"COMPANY"}`,
		`{"name":"  x  "}`, `{"name":null}`, `{}`, `[]`, `{"name":"a","name":"b"}`, `{"name":"a","extra":1}`,
		`{"name":"a","nif":"999999999"}`, `{"name":"a","nif":"123456789lA123"}`, `{"name":"a","email":"Ana <a@b.ao>"}`,
		`{"name":"a"} {}`, `{"name":1}`, `{"name":"\u0000"}`, `{"name":"a","address":"   "}`,
		"{\"name\":\"\xff\"}", `{"name":"a","phone":"+2449234567890"}`, `{"name":"a","type":"company"}`,
	} {
		f.Add([]byte(s), "application/json")
	}
	f.Add([]byte(`{"name":"a"}`), "text/plain")
	f.Add([]byte(`{"name":"a"}`), "application/json; charset=latin1")
	f.Add(bytes.Repeat([]byte(" "), web.MaxBodyBytes+1), "application/json")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/v1/clients", bytes.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		nc, err := decodeRequest(r)
		if err != nil {
			asProblem(t, err, "invalid_body", "body_too_large", "unsupported_media_type")
			return
		}
		if len(body) > web.MaxBodyBytes || !json.Valid(body) {
			t.Fatalf("accepted a body of %d bytes, valid JSON %v", len(body), json.Valid(body))
		}
		// What is accepted is normalized and within the rules...
		if n := nc.Name; n == "" || n != strings.TrimSpace(n) || !utf8.ValidString(n) || utf8.RuneCountInString(n) > 200 || !noControl(n) || hasHidden(n) {
			t.Fatalf("name %q accepted", n)
		}
		if nc.NIF != nil && (!nifPattern.MatchString(*nc.NIF) || *nc.NIF == finalConsumerNIF) {
			t.Fatalf("nif %q accepted", *nc.NIF)
		}
		if nc.Email != nil && (!validEmail(*nc.Email) || !noControl(*nc.Email)) {
			t.Fatalf("email %q accepted", *nc.Email)
		}
		if nc.Phone != nil && !phonePattern.MatchString(*nc.Phone) {
			t.Fatalf("phone %q accepted", *nc.Phone)
		}
		if a := nc.Address; a != nil && (*a == "" || *a != strings.TrimSpace(*a) || utf8.RuneCountInString(*a) > 500 || hasHidden(*a) ||
			!noControl(strings.NewReplacer("\n", "", "\r", "", "\t", "").Replace(*a))) {
			t.Fatalf("address %q accepted", *a)
		}
		if nc.Type != nil && *nc.Type != "COMPANY" && *nc.Type != "INDIVIDUAL" {
			t.Fatalf("type %q accepted", *nc.Type)
		}
		// ...and normalization is a fixed point: sending the result back
		// gives the same client.
		again, _ := json.Marshal(map[string]any{"name": nc.Name, "nif": nc.NIF, "email": nc.Email,
			"phone": nc.Phone, "address": nc.Address, "type": nc.Type})
		r2 := httptest.NewRequest(http.MethodPost, "/api/v1/v1/clients", bytes.NewReader(again))
		r2.Header.Set("Content-Type", "application/json")
		nc2, err := decodeRequest(r2)
		if err != nil {
			t.Fatalf("the normalized client %s is refused: %v", again, err)
		}
		b1, _ := json.Marshal(nc)
		b2, _ := json.Marshal(nc2)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("normalizing twice changes the client:\n%s\n%s", b1, b2)
		}
	})
}
