package authz

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

var (
	secretShape = regexp.MustCompile(`^igw_(live|test)_[0-9A-Za-z]{43}([0-9A-Za-z]{6})?$`)
	keyIDShape  = regexp.MustCompile(`^key_[a-z2-7]{20}$`)
)

// FuzzVerify: the bearer token of every request reaches Verify. Only the
// exact secret shapes (prefix, 43 base62 characters, then a right checksum
// or nothing) may cost a Redis command; anything else is ErrInvalidKey from
// memory. No input is ever accepted but the key's own secret, and no input
// panics. The bound of lookups is off: every input is judged on its own.
func FuzzVerify(f *testing.F) {
	rdb, _ := testenv.Miniredis(f)
	p := attachProbe(f, rdb)
	k := newRing(f, rdb, "fuzz:", nil, func(cfg *Config) {
		cfg.SourceLookups.Rate, cfg.InstanceLookups.Rate = -1, -1
	})
	_, good := mustCreate(f, k, companyA, invoicing.Live, "invoices:read")
	for _, s := range []string{good, good[:len(good)-1] + "!", good + "x", strings.Replace(good, "live", "test", 1),
		strings.Replace(good, "igw_live_", "IGW_LIVE_", 1), "", "igw_live_", "igw_prod_" + strings.Repeat("a", 43),
		"igw_live_" + strings.Repeat("é", 21) + "a", "igw_live_" + strings.Repeat("0", 43), "Bearer " + good,
		good[:len(good)-checksumChars], "igw_live_" + strings.Repeat("0", 43) + "4YFsOF"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mode, fm := parseSecret(s)
		if (fm != formMalformed) != secretShape.MatchString(s) {
			t.Fatalf("parseSecret(%q) form %d, shape says %v", s, fm, secretShape.MatchString(s))
		}
		if fm == formCurrent || fm == formBadChecksum {
			if right := checksum(s[:LegacySecretLength]) == s[LegacySecretLength:]; right != (fm == formCurrent) {
				t.Fatalf("parseSecret(%q) form %d; the checksum is right: %v", s, fm, right)
			}
		}
		ok := fm == formLegacy || fm == formCurrent
		if fm != formMalformed && string(mode) != strings.ToUpper(s[4:8]) {
			t.Fatalf("parseSecret(%q) = %s", s, mode)
		}
		// Only the commands this call sends: the keyring's background work
		// (renewing and touching the good key) may run meanwhile.
		before := p.tagged.Load()
		key, err := k.Verify(tagged(t.Context()), s)
		if s == good {
			if err != nil || key.CompanyID != companyA {
				t.Fatalf("the good key: %v", err)
			}
			return
		}
		if !errors.Is(err, ErrInvalidKey) {
			t.Fatalf("Verify(%q) = %v, want ErrInvalidKey", s, err)
		}
		if !ok && p.tagged.Load() != before {
			t.Fatalf("malformed %q cost %d Redis commands", s, p.tagged.Load()-before)
		}
	})
}

// FuzzKeyID: admin paths carry key ids; only our exact shape may become a
// Redis key name.
func FuzzKeyID(f *testing.F) {
	for _, s := range []string{"key_aaaaaaaaaaaaaaaaaaaa", "key_AAAAAAAAAAAAAAAAAAAA", "key_", "key_a*", "key_aaaaaaaaaaaaaaaaaaa1", "../x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if validKeyID(s) != keyIDShape.MatchString(s) {
			t.Fatalf("validKeyID(%q) = %v", s, validKeyID(s))
		}
	})
}
