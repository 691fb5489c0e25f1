package web

// A fuzz target for the Authorization header's parser. Seeds are in
// testdata/fuzz/FuzzBearer/ (with the regressions the fuzzer found); CI runs
// it for a few seconds (.ci/run).

import (
	"strings"
	"testing"
)

func FuzzBearer(f *testing.F) {
	for _, s := range []string{"Bearer igw_live_" + strings.Repeat("a", 43), "bearer x", "BEARER   x", "Bearer", "Bearer ",
		"Bearer a b", "Basic dXNlcjpwdw==", "Bearerabc", "", "Bearer \tx", "Bearer x\t", "Bearer\u00a0x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tok, ok := Bearer(h)
		if !ok {
			if tok != "" {
				t.Fatalf("bearer(%q) refused but returned %q", h, tok)
			}
			return
		}
		if tok == "" || strings.ContainsAny(tok, " \t") || !strings.HasSuffix(h, tok) {
			t.Fatalf("bearer(%q) = %q", h, tok)
		}
		head := strings.TrimRight(h[:len(h)-len(tok)], " ")
		if !strings.EqualFold(head, "bearer") {
			t.Fatalf("bearer(%q) accepted scheme %q", h, head)
		}
	})
}
