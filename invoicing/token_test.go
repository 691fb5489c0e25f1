package invoicing

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// A weak admin token is refused, saying why; tokens drawn from a random
// generator, in every usual encoding and length from 32 characters on, are
// accepted, every time.
func TestCheckToken(t *testing.T) {
	t.Parallel()
	for tok, want := range map[string]string{
		"a":                                       "fewer than 32",
		"admin-secret-token":                      "fewer than 32",
		"durable-test-admin-token":                "fewer than 32",
		"bench-admin-token-0123456789":            "fewer than 32",
		strings.Repeat("a", 40):                   "chosen",
		"admin-secret-token-admin-secret-token":   "chosen",
		"0123456789abcdef0123456789abcdef":        "chosen",
		"abcdefghijklmnopqrstuvwxyz0123456789":    "chosen",
		"passwordpasswordpasswordpassword":        "chosen",
		"zyxwvutsrqponmlkjihgfedcbaZYXWVUTS":      "chosen",
		"3f9a 1c0e 77b2 9d41 c8e5 02aa 6b13 f0d9": "visible ASCII",
		"3f9a1c0e77b29d41c8e502aa6b13f0d9\u00e9":  "visible ASCII",
		"3f9a1c0e77b29d41c8e502aa6b13f0d9":        "",
		"Jm4xQ0vB9sZr2LkT7yWc1nHd5gFp8eAu":        "",
		"9b1d5c6e-2f3a-4e8b-9c7d-0a1b2c3d4e5f":    "",
	} {
		err := CheckToken(tok)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: refused: %v", tok, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: %v, want an error about %q", tok, err, want)
		case err != nil && len(tok) > 1 && strings.Contains(err.Error(), tok):
			t.Errorf("the error holds the token: %v", err)
		}
	}
	for name, gen := range map[string]func([]byte) string{
		"hex":    hex.EncodeToString,
		"base64": base64.StdEncoding.EncodeToString,
		"base32": base32.StdEncoding.EncodeToString,
		"uuid": func(b []byte) string {
			h := hex.EncodeToString(b[:16])
			return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
		},
	} {
		for _, n := range []int{16, 20, 24, 32, 64, 512} {
			for range 2000 {
				b := make([]byte, n)
				_, _ = rand.Read(b)
				if tok := gen(b); len(tok) >= MinTokenLen {
					if err := CheckToken(tok); err != nil {
						t.Fatalf("%s of %d random bytes %q: %v", name, n, tok, err)
					}
				}
			}
		}
	}
}
