package seal

import (
	"errors"
	"strings"
	"testing"
)

func newKey(t *testing.T) string {
	t.Helper()
	id, rcpt, err := Generate()
	if err != nil || !strings.HasPrefix(id, "AGE-SECRET-KEY-1") || !strings.HasPrefix(rcpt, "age1") {
		t.Fatalf("Generate: %q %q %v", id, rcpt, err)
	}
	return id
}

// A sealed value holds nothing of the secret, opens with its key, and with
// the next key once that one is current and the old one kept; without the
// old key it is refused, never returned garbled.
func TestSealOpenRotate(t *testing.T) {
	t.Parallel()
	const secret = "whsec_c2VjcmV0IHNpZ25pbmcga2V5IG9mIDMyIGJ5dGVzIQ=="
	k1 := newKey(t)
	ring1, err := NewKeyring(k1)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ring1.Seal(secret)
	if err != nil || !Sealed(v) || strings.Contains(v, "whsec_") || strings.Contains(v, secret[6:20]) {
		t.Fatalf("sealed %q (%v)", v, err)
	}
	if v2, _ := ring1.Seal(secret); v2 == v {
		t.Error("two seals of one value are equal: no fresh randomness")
	}
	if p, err := ring1.Open(v); err != nil || p != secret {
		t.Fatalf("Open: %q %v", p, err)
	}
	if !ring1.Current(v) || ring1.Current(secret) {
		t.Error("Current: a value sealed by the current key is current, plain text is not")
	}

	k2 := newKey(t)
	ring2, err := NewKeyring(k2, k1)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := ring2.Open(v); err != nil || p != secret {
		t.Fatalf("the old key opens what it sealed: %q %v", p, err)
	}
	if ring2.Current(v) {
		t.Error("a value sealed by an old key is not current")
	}
	only2, _ := NewKeyring(k2)
	if _, err := only2.Open(v); !errors.Is(err, ErrWrongKey) {
		t.Errorf("without the old key: %v, want ErrWrongKey", err)
	}
	tampered := v[:len(v)-3] + "AAA"
	if _, err := ring1.Open(tampered); !errors.Is(err, ErrWrongKey) {
		t.Errorf("altered: %v, want ErrWrongKey", err)
	}
}

// Plain values (written before sealing was configured) keep working; a
// Keyring without keys seals nothing and cannot open a sealed value.
func TestPlainValues(t *testing.T) {
	t.Parallel()
	const secret = "whsec_plain"
	none, err := NewKeyring("")
	if err != nil || none.Enabled() {
		t.Fatalf("empty key: %v", err)
	}
	if v, _ := none.Seal(secret); v != secret {
		t.Errorf("without a key Seal gave %q", v)
	}
	if !none.Current(secret) {
		t.Error("without a key, plain text is current")
	}
	ring, _ := NewKeyring(newKey(t))
	if p, err := ring.Open(secret); err != nil || p != secret {
		t.Errorf("plain value through a keyring: %q %v", p, err)
	}
	v, _ := ring.Seal(secret)
	if _, err := none.Open(v); !errors.Is(err, ErrNoKey) {
		t.Errorf("sealed value without a key: %v", err)
	}
	var nilRing *Keyring
	if p, err := nilRing.Open(secret); err != nil || p != secret {
		t.Errorf("nil keyring: %q %v", p, err)
	}
}

// A key that is not an age identity is refused without being repeated.
func TestBadKey(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"not-a-key-SECRETVALUE", "age1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq"} {
		_, err := NewKeyring(k)
		if err == nil || strings.Contains(err.Error(), k) {
			t.Errorf("%q: %v", k, err)
		}
	}
	if _, err := NewKeyring("", newKey(t)); err == nil {
		t.Error("old keys without a current one were accepted")
	}
}

// The keys that sign export files come from the sealing keys: the same key
// gives the same file key (every instance and job signs alike), another
// key another; the current one's first, then the old ones'; none without
// a key, and none holds the key's text.
func TestFileKeys(t *testing.T) {
	t.Parallel()
	k1, k2 := newKey(t), newKey(t)
	a, _ := NewKeyring(k1)
	b, _ := NewKeyring(k1)
	rotated, _ := NewKeyring(k2, k1)
	if len(a.FileKeys()) != 1 || string(a.FileKeys()[0]) != string(b.FileKeys()[0]) {
		t.Fatal("one key, two file keys")
	}
	fk := rotated.FileKeys()
	if len(fk) != 2 || string(fk[1]) != string(a.FileKeys()[0]) || string(fk[0]) == string(fk[1]) {
		t.Fatalf("after a rotation: %d keys, the old one's second, the new one's another", len(fk))
	}
	if strings.Contains(string(fk[0]), k2) || len(fk[0]) != 32 {
		t.Error("a file key is not a derived 32-byte key")
	}
	if none, _ := NewKeyring(""); none.FileKeys() != nil {
		t.Error("file keys without a key")
	}
}
