// Package seal encrypts the small secrets the gateway keeps in Redis (webhook
// signing secrets) with age (filippo.io/age), to a key the operator gives:
// whoever reads Redis, or a copy of it, reads no secret. It is the same
// mechanism as the export file's (state), which age encrypts to a passphrase
// or to recipients.
//
// A sealed value is "age:" and the base64 of an age file encrypted to the
// current key's recipient. Older keys open what they sealed, so that a key
// is rotated without a stop: the new key seals, the old ones still open,
// and once everything is sealed again under the new key (Keyring.Current
// tells which values are not) the old ones are dropped.
//
// The same key vouches for the export files that carry those secrets
// (Keyring.FileKeys): age encrypts a file to a recipient, which is public,
// so anyone holding it can write a file that opens; only the operators
// hold the identity, from which the key that signs a file is derived.
package seal

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"filippo.io/age"
)

// Prefix starts every sealed value; anything else is a value kept in plain
// text (written before sealing was configured).
const Prefix = "age:"

// Errors of sealing.
var (
	// ErrNoKey: a sealed value met a Keyring without keys (sealing not
	// configured), or a value must be sealed and cannot be.
	ErrNoKey = errors.New("seal: no key to open or seal secrets (webhookSecretsKey)")
	// ErrWrongKey: no key of the Keyring opens the value: it was sealed
	// with a key that is not configured (any more), or it was altered.
	ErrWrongKey = errors.New("seal: the secret was sealed with a key that is not configured (webhookSecretsKey, webhookSecretsOldKeys), or altered")
)

// Keyring seals with its current key and opens with any of its keys. The
// zero Keyring (or nil) has no key: it opens plain values only and seals
// nothing (Seal returns the value as is). Safe for concurrent use.
type Keyring struct {
	recipient age.Recipient
	current   age.Identity
	all       []age.Identity
	fileKeys  [][]byte // FileKeys

	mu     sync.Mutex
	opened map[string]string // sealed value → plain: X25519 costs ~60 µs a value
}

// maxCache bounds the opened values remembered.
const maxCache = 100_000

// NewKeyring reads the current key and older ones, each an age identity
// ("AGE-SECRET-KEY-1…", as Generate or age-keygen make them). An empty
// current key makes a Keyring without keys; old keys need a current one.
func NewKeyring(current string, old ...string) (*Keyring, error) {
	current = strings.TrimSpace(current)
	if current == "" {
		if len(old) > 0 {
			return nil, errors.New("seal: old keys without a current key")
		}
		return &Keyring{}, nil
	}
	k := &Keyring{opened: map[string]string{}}
	for i, s := range append([]string{current}, old...) {
		ids, err := age.ParseIdentities(strings.NewReader(strings.TrimSpace(s)))
		if err != nil || len(ids) != 1 {
			// age's message never holds the key; ours says which one.
			return nil, fmt.Errorf("seal: key %d is not one age identity (AGE-SECRET-KEY-1…): %v", i+1, err)
		}
		k.all = append(k.all, ids[0])
		fk, err := fileKey(ids[0])
		if err != nil {
			return nil, fmt.Errorf("seal: key %d: %w", i+1, err)
		}
		k.fileKeys = append(k.fileKeys, fk)
	}
	k.current = k.all[0]
	switch id := k.current.(type) {
	case *age.X25519Identity:
		k.recipient = id.Recipient()
	case *age.HybridIdentity:
		k.recipient = id.Recipient()
	default:
		return nil, fmt.Errorf("seal: unsupported identity %T", id)
	}
	return k, nil
}

// fileKeyInfo names what a derived key is for (HKDF's info): a key derived
// for one purpose is never another's.
const fileKeyInfo = "invoicing-gateway state file signature v1"

// fileKey derives, with HKDF-SHA256, the key that signs export files from
// an identity's text (its Bech32 form, which is the key).
func fileKey(id age.Identity) ([]byte, error) {
	s, ok := id.(fmt.Stringer)
	if !ok {
		return nil, fmt.Errorf("unsupported identity %T", id)
	}
	return hkdf.Key(sha256.New, []byte(s.String()), nil, fileKeyInfo, sha256.Size)
}

// FileKeys are the keys that sign and check export files (state): the
// current key's first, then the old keys', so that a file exported before a
// rotation is still checked while the old key is kept. Nil without a key.
func (k *Keyring) FileKeys() [][]byte {
	if !k.Enabled() {
		return nil
	}
	return k.fileKeys
}

// Generate makes a new key (an age X25519 identity) and its recipient.
func Generate() (identity, recipient string, err error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return "", "", err
	}
	return id.String(), id.Recipient().String(), nil
}

// Enabled reports whether k has a key: Seal then seals.
func (k *Keyring) Enabled() bool { return k != nil && k.current != nil }

// Sealed reports whether v is a sealed value (else plain text).
func Sealed(v string) bool { return strings.HasPrefix(v, Prefix) }

// Seal encrypts plain to the current key; without a key it returns plain
// as is (the operator chose plain text).
func (k *Keyring) Seal(plain string) (string, error) {
	if !k.Enabled() {
		return plain, nil
	}
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, k.recipient)
	if err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	if _, err := io.WriteString(w, plain); err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	return Prefix + base64.RawStdEncoding.EncodeToString(buf.Bytes()), nil
}

// Open returns the plain value of v: v itself when it is not sealed.
func (k *Keyring) Open(v string) (string, error) {
	if !Sealed(v) {
		return v, nil
	}
	if !k.Enabled() {
		return "", ErrNoKey
	}
	k.mu.Lock()
	p, ok := k.opened[v]
	k.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := open(v, k.all)
	if err != nil {
		return "", err
	}
	k.mu.Lock()
	if len(k.opened) >= maxCache {
		clear(k.opened)
	}
	k.opened[v] = p
	k.mu.Unlock()
	return p, nil
}

func open(v string, ids []age.Identity) (string, error) {
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimPrefix(v, Prefix))
	if err != nil {
		return "", ErrWrongKey
	}
	r, err := age.Decrypt(bytes.NewReader(raw), ids...)
	if err != nil {
		return "", ErrWrongKey
	}
	b, err := io.ReadAll(io.LimitReader(r, 1<<16))
	if err != nil {
		return "", ErrWrongKey
	}
	return string(b), nil
}

// Current reports whether v is as this Keyring would store it now: sealed
// by the current key when there is one (plain text or an old key's seal is
// not), plain text when there is none. Values that are not current are
// sealed again by their owner (events: Service.Reseal).
func (k *Keyring) Current(v string) bool {
	if !k.Enabled() {
		return !Sealed(v)
	}
	if !Sealed(v) {
		return false
	}
	_, err := open(v, k.all[:1])
	return err == nil
}
