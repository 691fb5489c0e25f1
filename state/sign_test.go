package state_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/internal/seal"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/state"
)

// A file that does not come from the deployment is refused before anything
// is read of it, and changes nothing, in an emptied Redis as in a live one:
// a plain export whose revoked key was set back to active and whose
// checksum was made again; a file that someone holding the export
// recipient (public) wrote, with a key of theirs, signed with another key,
// or with this deployment's key id and a signature of their own.
func TestForgedFilesRefused(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	p := newPlane(t, rdb, prefix, sealKey(t))
	p.populate()
	plain := p.export(state.Sealing{})
	reactivated := resum(bytes.Replace(plain, []byte(`"state":"revoked"`), []byte(`"state":"active"`), 1))
	if bytes.Equal(reactivated, plain) {
		t.Fatal("the export has no revoked key to reactivate")
	}

	// Someone with the recipient and a Redis of their own: a key of theirs
	// for company B, and an endpoint.
	id, rcpt := ageKey(t)
	mallory := newPlane(t, rdb, prefix+"mallory:", sealKey(t))
	mallory.populate()
	toUs := state.Sealing{Recipients: []age.Recipient{rcpt}}
	theirs := mallory.export(toUs)
	underOurs := signWith(withKeyID(t, theirs, keyIDOf(t, plain)), mallory.sign[0])
	open := state.Opening{Identities: []age.Identity{id}}

	p.lose()
	empty := p.snapshot()
	for _, c := range []struct {
		name string
		file []byte
		open state.Opening
		want error
	}{
		{"a revoked key made active, checksum made again", reactivated, state.Opening{}, state.ErrForged},
		{"written to the recipient, signed with another key", theirs, open, state.ErrNotOurs},
		{"written to the recipient, under this deployment's key id", underOurs, open, state.ErrForged},
		{"written to the recipient, unsigned", mallory.exportAs(toUs), open, state.ErrUnsigned},
		{"a forgery, unsigned accepted", reactivated, state.Opening{AcceptUnsigned: true}, state.ErrForged},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := p.importFile(c.file, c.open)
			if !errors.Is(err, c.want) {
				t.Fatalf("import: %v, want %v", err, c.want)
			}
			if !equal(empty, p.snapshot()) {
				t.Fatal("a refused file changed Redis")
			}
		})
	}
	if err := p.verify("revoked"); !errors.Is(err, authz.ErrInvalidKey) {
		t.Fatalf("the revoked key after the forgeries: %v", err)
	}
	if _, err := p.importFile(plain, state.Opening{}); err != nil {
		t.Fatalf("the export itself: %v", err)
	}
	if err := p.verify("revoked"); !errors.Is(err, authz.ErrInvalidKey) {
		t.Fatalf("the revoked key after the import: %v", err)
	}
}

// What cannot be checked is refused unless the import accepts it, and then
// the document says it was not signed: an export of an older gateway
// (format 1, no signature line), one of a gateway without a key
// ("signature none"), one signed where the importing gateway has no key. A
// file signed with the key before a rotation is checked while the old key
// is kept.
func TestUnsignedAndRotatedFiles(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	oldKey, newKey := sealKey(t), sealKey(t)
	p := newPlane(t, rdb, prefix, oldKey)
	p.populate()
	signed := p.export(state.Sealing{})
	none := p.exportAs(state.Sealing{})
	if !strings.Contains(string(none), "\nsignature none\nsha256 ") {
		t.Fatalf("an export without a key: %q", none[len(none)-100:])
	}
	formatOne := formatOneOf(t, none)
	rotated, err := seal.NewKeyring(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	only, err := seal.NewKeyring(newKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		file   []byte
		keys   [][]byte
		want   error
		signed bool
	}{
		{"format 1", formatOne, p.sign, state.ErrUnsigned, false},
		{"signature none", none, p.sign, state.ErrUnsigned, false},
		{"signed, no key to check it", signed, [][]byte{}, state.ErrCannotCheck, false},
		{"signed before a rotation, the old key kept", signed, rotated.FileKeys(), nil, true},
		{"signed before a rotation, the old key dropped", signed, only.FileKeys(), state.ErrNotOurs, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc, err := state.Read(bytes.NewReader(c.file), state.Opening{SigningKeys: c.keys})
			if !errors.Is(err, c.want) || (err == nil && doc.Signed != c.signed) {
				t.Fatalf("read: %v (signed %v), want %v", err, doc.Signed, c.want)
			}
			if c.want == nil {
				return
			}
			doc, err = state.Read(bytes.NewReader(c.file), state.Opening{SigningKeys: c.keys, AcceptUnsigned: true})
			if err != nil || doc.Signed || len(doc.Parts) != 3 {
				t.Fatalf("read, unsigned accepted: %v (signed %v, %d parts)", err, doc.Signed, len(doc.Parts))
			}
		})
	}
}

// ageKey is an export recipient and its identity.
func ageKey(t *testing.T) (age.Identity, age.Recipient) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id, id.Recipient()
}

// keyIDOf is the key id of a signed file's signature line.
func keyIDOf(t *testing.T, b []byte) string {
	t.Helper()
	line := strings.Fields(string(b[bytes.LastIndex(b, []byte("\nsignature ")):bytes.LastIndex(b, []byte("\nsha256 "))]))
	if len(line) != 4 {
		t.Fatalf("signature line %q", line)
	}
	return line[2]
}

// withKeyID is b with the key id of its signature line replaced.
func withKeyID(t *testing.T, b []byte, kid string) []byte {
	t.Helper()
	return bytes.Replace(b, []byte(" "+keyIDOf(t, b)+" "), []byte(" "+kid+" "), 1)
}

// formatOneOf is an unsigned file as a gateway of format 1 wrote it: no
// signature line.
func formatOneOf(t *testing.T, none []byte) []byte {
	t.Helper()
	b := bytes.Replace(none, []byte("invoicing-gateway-state 3 "), []byte("invoicing-gateway-state 1 "), 1)
	b = bytes.Replace(b, []byte(`{"format":3,`), []byte(`{"format":1,`), 1)
	b = b[:bytes.LastIndex(b, []byte("\nsignature none"))]
	return append(b, checksumLine(b)...)
}
