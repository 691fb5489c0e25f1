package authz

import (
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/invoicing"
)

func TestNewSecretShape(t *testing.T) {
	t.Parallel()
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
		got, f := parseSecret(s)
		if f != formCurrent || got != m {
			t.Fatalf("parseSecret of a fresh %s secret = %q, form %d", m, got, f)
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

func TestParseSecret(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("aZ9", 15)[:secretBody]
	// The checksums below were computed outside Go (Python's zlib.crc32,
	// then base62 0-9A-Za-z, most significant digit first): they pin the
	// format that secret scanners check.
	zero := "igw_live_" + strings.Repeat("0", secretBody)
	docs := "igw_test_4Vq0Xb1e6cJk9dPzR2uWmA7sYt3nLhG8fQo5iKxEwTj"
	if got := checksum(zero); got != "4YFsOF" {
		t.Fatalf("checksum(%q) = %q, want 4YFsOF", zero, got)
	}
	if got := checksum(docs); got != "3ZXgfk" {
		t.Fatalf("checksum(%q) = %q, want 3ZXgfk", docs, got)
	}
	for _, tc := range []struct {
		in   string
		mode invoicing.Mode
		f    form
	}{
		{zero + "4YFsOF", invoicing.Live, formCurrent},
		{docs + "3ZXgfk", invoicing.Test, formCurrent},
		{zero + "4YFsOG", invoicing.Live, formBadChecksum},
		{zero + "000000", invoicing.Live, formBadChecksum},
		{zero + "zzzzzz", invoicing.Live, formBadChecksum}, // over 2^32 once decoded
		{strings.Replace(docs, "test", "live", 1) + "3ZXgfk", invoicing.Live, formBadChecksum},
		{"igw_live_" + body, invoicing.Live, formLegacy},
		{"igw_test_" + body, invoicing.Test, formLegacy},
		{"igw_prod_" + body, "", formMalformed},
		{"IGW_LIVE_" + body, "", formMalformed},
		{"igw_live_" + body[:secretBody-1], "", formMalformed},
		{"igw_live_" + body + "a", "", formMalformed},
		{"igw_live_" + body + "abcde", "", formMalformed},
		{"igw_live_" + body + "abcdefg", "", formMalformed},
		{"igw_live_" + body[:secretBody-1] + "-", "", formMalformed},
		{"igw_live_" + body[:secretBody-1] + "_", "", formMalformed},
		{"igw_live_" + body[:20] + "é" + body[22:], "", formMalformed},
		{"igw_live_" + body[:secretBody-1] + "\x00", "", formMalformed},
		{zero + "4YFsO-", "", formMalformed},
		{"", "", formMalformed},
		{"Bearer igw_live_" + body, "", formMalformed},
	} {
		m, f := parseSecret(tc.in)
		if m != tc.mode || f != tc.f {
			t.Errorf("parseSecret(%q) = %q, %d; want %q, %d", tc.in, m, f, tc.mode, tc.f)
		}
	}
}

// TestChecksumCatchesTypos: every one-character change and every swap of
// two neighbouring characters of a secret breaks its checksum (CRC-32
// finds every error within 32 consecutive bits), so no typo of a real key
// reaches Redis.
func TestChecksumCatchesTypos(t *testing.T) {
	t.Parallel()
	for i := 0; i < 5; i++ {
		s, err := newSecret(invoicing.Live)
		if err != nil {
			t.Fatal(err)
		}
		for pos := prefixLen; pos < len(s); pos++ {
			for _, c := range []byte(base62Digits) {
				if c == s[pos] {
					continue
				}
				typo := s[:pos] + string(c) + s[pos+1:]
				if _, f := parseSecret(typo); f != formBadChecksum {
					t.Fatalf("a one-character change at %d has form %d, want formBadChecksum", pos, f)
				}
			}
			if pos+1 < len(s) && s[pos] != s[pos+1] {
				swapped := s[:pos] + s[pos+1:pos+2] + s[pos:pos+1] + s[pos+2:]
				if _, f := parseSecret(swapped); f != formBadChecksum {
					t.Fatalf("a swap at %d has form %d, want formBadChecksum", pos, f)
				}
			}
		}
	}
}

func TestKeyID(t *testing.T) {
	t.Parallel()
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
