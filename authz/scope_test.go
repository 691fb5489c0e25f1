package authz

import (
	"errors"
	"reflect"
	"testing"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

func TestParseMode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want invoicing.Mode
		err  bool
	}{
		{"LIVE", invoicing.Live, false},
		{"TEST", invoicing.Test, false},
		{"live", invoicing.Live, false},
		{"Test", invoicing.Test, false},
		{"", "", true},
		{"PROD", "", true},
		{" LIVE", "", true},
		{"LIVE\x00", "", true},
	} {
		got, err := invoicing.ParseMode(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseMode(%q) = %q, %v", tc.in, got, err)
		}
		if tc.err && !errors.Is(err, invoicing.ErrInvalidMode) {
			t.Errorf("ParseMode(%q) error %v is not ErrInvalidMode", tc.in, err)
		}
	}
}

func TestParseScopes(t *testing.T) {
	t.Parallel()
	all := ScopeSet(0)
	for _, c := range canonical {
		all |= bit(c)
	}
	for _, tc := range []struct {
		in   string
		want ScopeSet
		err  bool
	}{
		{"invoices:read", bit(InvoicesRead), false},
		{"clients:read,clients:write", bit(ClientsRead) | bit(ClientsWrite), false},
		{"clients:write, invoices:read ,clients:read , events:read", all, false},
		{"INVOICES:READ", bit(InvoicesRead), false},
		{"events:read", bit(EventsRead), false},
		{"events:read,clients:read", bit(EventsRead) | bit(ClientsRead), false},
		{"events:write", 0, true},
		{"invoices:read,invoices:read", bit(InvoicesRead), false},
		{"", 0, true},
		{"  ", 0, true},
		{"invoices:read,", 0, true},
		{"invoices:write", 0, true},
		{"invoices", 0, true},
		{"invoices:read,admin", 0, true},
	} {
		got, err := ParseScopes(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseScopes(%q) = %v, %v", tc.in, got, err)
		}
		if tc.err && !errors.Is(err, ErrUnknownScope) {
			t.Errorf("ParseScopes(%q) error %v is not ErrUnknownScope", tc.in, err)
		}
	}
	if _, err := ParseScopes("invoices:read,admin"); err == nil || !contains(err.Error(), `"admin"`) {
		t.Errorf("error should name the bad scope: %v", err)
	}
}

func TestScopeSet(t *testing.T) {
	t.Parallel()
	s, _ := ParseScopes("clients:write,invoices:read")
	if !s.Has(InvoicesRead) || !s.Has(ClientsWrite) || s.Has(ClientsRead) || s.Has("bogus") {
		t.Errorf("Has wrong for %08b", s)
	}
	if got, want := s.List(), []Scope{InvoicesRead, ClientsWrite}; !reflect.DeepEqual(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	if got := s.String(); got != "invoices:read,clients:write" {
		t.Errorf("String = %q", got)
	}
	if ScopeSet(0).String() != "" || len(ScopeSet(0).List()) != 0 {
		t.Error("empty set should print empty")
	}
	back, err := ParseScopes(s.String())
	if err != nil || back != s {
		t.Errorf("round trip: %v %v", back, err)
	}
	if ScopeSet(0).valid() || ScopeSet(1<<7).valid() || !s.valid() {
		t.Error("valid wrong")
	}
}

func TestAuthorize(t *testing.T) {
	t.Parallel()
	const company = "0b7e3c6a-5f1d-4c1e-9a51-2d3f4e5a6b7c"
	k := Key{CompanyID: company, Scopes: bit(InvoicesRead) | bit(ClientsRead)}
	for _, tc := range []struct {
		company string
		need    Scope
		want    error
	}{
		{company, InvoicesRead, nil},
		{company, ClientsRead, nil},
		{"0B7E3C6A-5F1D-4C1E-9A51-2D3F4E5A6B7C", ClientsRead, nil},
		{company, ClientsWrite, ErrMissingScope},
		{"11111111-1111-1111-1111-111111111111", InvoicesRead, ErrWrongCompany},
		// Company first: another company's request never learns the scopes.
		{"11111111-1111-1111-1111-111111111111", ClientsWrite, ErrWrongCompany},
		{"", InvoicesRead, ErrWrongCompany},
	} {
		if err := k.Authorize(tc.company, tc.need); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("Authorize(%q, %s) = %v, want %v", tc.company, tc.need, err, tc.want)
		}
	}
}

func TestValidators(t *testing.T) {
	t.Parallel()
	long := make([]byte, MaxNameLen+1)
	for i := range long {
		long[i] = 'a'
	}
	for s, want := range map[string]bool{
		"":                        true,
		"ERP produção":            true,
		string(long[:MaxNameLen]): true,
		string(long):              false,
		"tab\there":               false,
		"bad\xffutf8":             false,
		"backup\u202Eyek":         false, // shown reversed
		"prod\u200Dkey":           false,
		"\uFEFFprod":              false,
		"prod\u2028key":           false,
	} {
		if validName(s) != want {
			t.Errorf("validName(%q) != %v", s, want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestNewRefusesBracedPrefix(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("New accepted a prefix with a brace")
		}
	}()
	New(Config{Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), Prefix: "{authz}:"})
}
