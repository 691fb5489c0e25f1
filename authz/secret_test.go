package authz

import (
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/invoicing"
)

func TestNewSecretShape(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 500; i++ {
		m := invoicing.Live
		if i%2 == 1 {
			m = invoicing.Test
		}
		s, err := newSecret(m)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != SecretLength || !strings.HasPrefix(s, modePrefix(m)) {
			t.Fatalf("secret of mode %s has wrong shape (len %d)", m, len(s))
		}
		for _, c := range s[prefixLen:] {
			if !strings.ContainsRune(base62Digits, c) {
				t.Fatalf("secret body holds %q", c)
			}
		}
		got, ok := secretMode(s)
		if !ok || got != m {
			t.Fatalf("secretMode of a fresh %s secret = %q, %v", m, got, ok)
		}
		if seen[s] {
			t.Fatal("duplicate secret")
		}
		seen[s] = true
		h := hint(s)
		if strings.Contains(h, s[prefixLen:prefixLen+8]) || !strings.HasSuffix(h, s[len(s)-4:]) || !strings.HasPrefix(h, modePrefix(m)) {
			t.Fatalf("hint %q is not prefix + last four", h)
		}
		if len(h) >= len(s)/2 {
			t.Fatalf("hint %q too long", h)
		}
	}
}

func TestSecretMode(t *testing.T) {
	body := strings.Repeat("aZ9", 15)[:secretBody]
	for _, tc := range []struct {
		in   string
		mode invoicing.Mode
		ok   bool
	}{
		{"igw_live_" + body, invoicing.Live, true},
		{"igw_test_" + body, invoicing.Test, true},
		{"igw_prod_" + body, "", false},
		{"IGW_LIVE_" + body, "", false},
		{"igw_live_" + body[:secretBody-1], "", false},
		{"igw_live_" + body + "a", "", false},
		{"igw_live_" + body[:secretBody-1] + "-", "", false},
		{"igw_live_" + body[:secretBody-1] + "_", "", false},
		{"igw_live_" + body[:20] + "é" + body[22:], "", false},
		{"igw_live_" + body[:secretBody-1] + "\x00", "", false},
		{"", "", false},
		{"Bearer igw_live_" + body, "", false},
	} {
		m, ok := secretMode(tc.in)
		if m != tc.mode || ok != tc.ok {
			t.Errorf("secretMode(%q) = %q, %v; want %q, %v", tc.in, m, ok, tc.mode, tc.ok)
		}
	}
}

func TestKeyID(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		id, err := newKeyID()
		if err != nil {
			t.Fatal(err)
		}
		if !validKeyID(id) || seen[id] {
			t.Fatalf("bad or duplicate id %q", id)
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "key_", "key_abcdefghijklmnopqrs1", "KEY_abcdefghijklmnopqrst", "key_abcdefghijklmnopqrs*", "key_abcdefghijklmnopqrstu"} {
		if validKeyID(bad) {
			t.Errorf("validKeyID(%q) = true", bad)
		}
	}
}
