package invoicing

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestCanonicalUUID(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"a0000000-0000-4000-8000-00000000000a":  "a0000000-0000-4000-8000-00000000000a",
		"A0000000-0000-4000-8000-00000000000A":  "a0000000-0000-4000-8000-00000000000a",
		"0b7e3c6a-5f1d-4c1e-9a51-2d3f4e5a6b7c":  "0b7e3c6a-5f1d-4c1e-9a51-2d3f4e5a6b7c",
		"0B7E3C6A-5F1D-4C1E-9A51-2D3F4E5A6B7C":  "0b7e3c6a-5f1d-4c1e-9a51-2d3f4e5a6b7c",
		"a0000000000040008000-00000000000a00":   "",
		"0b7e3c6a5f1d4c1e9a512d3f4e5a6b7c":      "",
		"g0000000-0000-4000-8000-00000000000a":  "",
		"a0000000-0000-4000-8000-00000000000":   "",
		"{b7e3c6a-5f1d-4c1e-9a51-2d3f4e5a6b7c}": "",
		"":                                      "",
		"a0000000-0000-4000-8000-00000000000a'": "",
	}
	for in, want := range cases {
		got, ok := CanonicalUUID(in)
		if got != want || ok != (want != "") {
			t.Errorf("CanonicalUUID(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestParseCompanyID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		" 0B7E3C6A-5F1D-4C1E-9A51-2D3F4E5A6B7C ": "0b7e3c6a-5f1d-4c1e-9a51-2d3f4e5a6b7c",
		"0b7e3c6a-5f1d-4c1e-9a51-2d3f4e5a6b7c":   "0b7e3c6a-5f1d-4c1e-9a51-2d3f4e5a6b7c",
		"acme":                                   "",
		"{0b7e3c6a-5f1d-4c1e-9a51-2d3f4e5a6b7}":  "",
		"":                                       "",
	} {
		got, err := ParseCompanyID(in)
		if got != want || (err == nil) != (want != "") || (err != nil && !errors.Is(err, ErrInvalidCompany)) {
			t.Errorf("ParseCompanyID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestParseMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Mode{"LIVE": Live, "live": Live, "Test": Test, "TEST": Test, "": "", "prod": "", " LIVE": ""} {
		got, err := ParseMode(in)
		if got != want || (err == nil) != (want != "") || (err != nil && !errors.Is(err, ErrInvalidMode)) {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if Live.Index() != 0 || Test.Index() != 1 || Modes[Live.Index()] != Live || Modes[Test.Index()] != Test {
		t.Error("Index and Modes disagree")
	}
	if Live.Lower() != "live" || Test.Lower() != "test" || !Live.Valid() || !Test.Valid() || Mode("").Valid() {
		t.Error("Lower or Valid wrong")
	}
}

var uuidShape = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// FuzzCanonicalUUID: every path id and company id goes through CanonicalUUID
// before it reaches SQL or a Redis key. It accepts exactly the 8-4-4-4-12 hex
// form and returns its lower-case spelling, so that anything else is "not
// found" without a query.
func FuzzCanonicalUUID(f *testing.F) {
	for _, s := range []string{"0a5e7c1e-0000-4000-8000-00000000000a", "0A5E7C1E-0000-4000-8000-00000000000A",
		"0a5e7c1e00004000800000000000000a", "0a5e7c1e-0000-4000-8000-00000000000g", "' OR 1=1 --",
		"0a5e7c1e-0000-4000-8000-00000000000", "{0a5e7c1e-0000-4000-8000-00000000000a}", "0a5e7c1e-0000-4000-8000_00000000000a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := CanonicalUUID(s)
		if ok != uuidShape.MatchString(s) {
			t.Fatalf("CanonicalUUID(%q) ok=%v", s, ok)
		}
		if ok && got != strings.ToLower(s) {
			t.Fatalf("CanonicalUUID(%q) = %q", s, got)
		}
		if !ok && got != "" {
			t.Fatalf("CanonicalUUID(%q) refused but returned %q", s, got)
		}
	})
}
