package backend

import (
	"regexp"
	"strings"
	"testing"
)

var uuidShape = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// FuzzLowerUUID: every path id and company id goes through lowerUUID before
// it reaches SQL. It accepts exactly the 8-4-4-4-12 hex form and returns its
// lower-case spelling, so that anything else is "not found" without a query.
func FuzzLowerUUID(f *testing.F) {
	for _, s := range []string{"0a5e7c1e-0000-4000-8000-00000000000a", "0A5E7C1E-0000-4000-8000-00000000000A",
		"0a5e7c1e00004000800000000000000a", "0a5e7c1e-0000-4000-8000-00000000000g", "' OR 1=1 --",
		"0a5e7c1e-0000-4000-8000-00000000000", "{0a5e7c1e-0000-4000-8000-00000000000a}", "0a5e7c1e-0000-4000-8000_00000000000a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := lowerUUID(s)
		if ok != uuidShape.MatchString(s) {
			t.Fatalf("lowerUUID(%q) ok=%v", s, ok)
		}
		if ok && got != strings.ToLower(s) {
			t.Fatalf("lowerUUID(%q) = %q", s, got)
		}
		if !ok && got != "" {
			t.Fatalf("lowerUUID(%q) refused but returned %q", s, got)
		}
	})
}
