package state_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/internal/seal"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/state"
)

// workFactor keeps scrypt cheap in tests; the default is age's.
const workFactor = 10

func sealKey(t testing.TB) string {
	id, _, err := seal.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// verify is what a freshly started instance says of a key's secret.
func (p *plane) verify(name string) error {
	k := authz.New(authz.Config{Redis: p.rdb, Prefix: p.prefix + "authz:", NoPubSub: true})
	defer k.Close()
	_, err := k.Verify(context.Background(), p.secrets[name])
	return err
}

// Export, lose everything, import: the plane is as it was, record for
// record (ids, creation times, states, the signing secrets);
// revoked keys are still refused, the others work; an encrypted file holds
// none of the secrets. Importing again changes nothing.
func TestRoundTripAfterLoss(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	p := newPlane(t, rdb, prefix, sealKey(t))
	p.populate()
	before := p.parts()
	file := p.export(state.Sealing{Passphrase: "correct horse battery staple", WorkFactor: workFactor})
	for name, s := range p.secrets {
		for _, frag := range []string{s, s[len(s)-20:]} {
			if bytes.Contains(file, []byte(frag)) {
				t.Fatalf("the encrypted file holds %s's secret", name)
			}
		}
	}
	for _, shape := range []string{"whsec_", "igw_", "AGE-SECRET"} {
		if bytes.Contains(file, []byte(shape)) {
			t.Fatalf("the encrypted file holds %q", shape)
		}
	}

	p.lose()
	if err := p.verify("active"); !errors.Is(err, authz.ErrInvalidKey) {
		t.Fatalf("after the loss, a key answers %v", err)
	}
	counts, err := p.importFile(file, state.Opening{Passphrase: "correct horse battery staple"})
	if err != nil {
		t.Fatal(err)
	}
	if c := counts["keys"]; c.Added != 5 || c.Updated+c.Unchanged != 0 {
		t.Errorf("keys: %+v, want 5 added", c)
	}
	if c := counts["webhooks"]; c.Added != 2 {
		t.Errorf("webhooks: %+v, want 2 added (the deleted one stays deleted)", c)
	}
	after := p.parts()
	for name := range before {
		if !bytes.Equal(before[name], after[name]) {
			t.Errorf("%s after the import differ:\n%s\nwas\n%s", name, after[name], before[name])
		}
	}
	for name, want := range map[string]error{"active": nil, "successor": nil, "rolled": nil, "expiring": nil, "revoked": authz.ErrInvalidKey} {
		if err := p.verify(name); !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Errorf("key %s after the import: %v, want %v", name, err, want)
		}
	}

	snap := p.snapshot()
	counts, err = p.importFile(file, state.Opening{Passphrase: "correct horse battery staple"})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range counts {
		if c.Added+c.Updated != 0 {
			t.Errorf("the second import of %s: %+v", name, c)
		}
	}
	if !equal(snap, p.snapshot()) {
		t.Error("a second import of the same file changed Redis")
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A file refused for any reason changes nothing, whatever part it fails in:
// truncated, damaged, altered under its encryption (its signature, then
// age's authentication, refuse it), of another version (the file's or a
// part's), opened with the wrong passphrase or none, or holding a record
// that cannot be (in its last part, after parts that could be written),
// signed again with the deployment's key so that its signature holds.
func TestRefusedFilesChangeNothing(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	p := newPlane(t, rdb, prefix, sealKey(t))
	p.populate()
	const pass = "s3cret passphrase"
	enc := p.export(state.Sealing{Passphrase: pass, WorkFactor: workFactor})
	plain := p.export(state.Sealing{})
	p.lose() // the target: a Redis with other state
	p.populate()
	snap, entries := p.snapshot(), p.auditCount()
	secretActor := olderAudit(time.Now())
	secretActor.Companies[1].Entries[0].Fields["actor"] = "igw_live_00000000000000000000000"

	for _, c := range []struct {
		name string
		file []byte
		open state.Opening
		want error
	}{
		{"truncated", enc[:len(enc)-40], state.Opening{Passphrase: pass}, state.ErrTruncated},
		{"truncated in the body", append(append([]byte{}, enc[:len(enc)/2]...), enc[len(enc)-72:]...), state.Opening{Passphrase: pass}, state.ErrTruncated},
		{"a byte flipped", flip(enc, len(enc)/2), state.Opening{Passphrase: pass}, state.ErrTruncated},
		{"altered, checksum made again", resum(flip(enc, len(enc)/2)), state.Opening{Passphrase: pass}, state.ErrForged},
		{"altered, signed again with the key", p.resign(flip(enc, len(enc)/2)), state.Opening{Passphrase: pass}, state.ErrAltered},
		{"wrong passphrase", enc, state.Opening{Passphrase: "not it"}, state.ErrWrongKey},
		{"no passphrase", enc, state.Opening{}, state.ErrNeedKey},
		{"foreign format", p.resign(bytes.Replace(enc, []byte("invoicing-gateway-state 3 "), []byte("invoicing-gateway-state 4 "), 1)), state.Opening{Passphrase: pass}, state.ErrForeign},
		{"foreign keys version", p.resign(bytes.Replace(plain, []byte(`"keys":{"version":1`), []byte(`"keys":{"version":2`), 1)), state.Opening{}, authz.ErrInvalidState},
		{"a key record that cannot be", p.resign(bytes.Replace(plain, []byte(`"state":"revoked"`), []byte(`"state":"lost"`), 1)), state.Opening{}, authz.ErrInvalidState},
		{"an older file's audit entry with a secret", p.asFormat2(plain, secretActor), state.Opening{}, audit.ErrInvalidState},
		{"not an export", []byte("hello\n"), state.Opening{}, state.ErrNotAnExport},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := p.importFile(c.file, c.open)
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
				t.Fatalf("import: %v, want %v", err, c.want)
			}
			if !equal(snap, p.snapshot()) {
				t.Fatal("a refused file changed Redis")
			}
			if n := p.auditCount(); n != entries {
				t.Fatalf("a refused file changed the audit log: %d entries, were %d", n, entries)
			}
		})
	}
	if _, err := p.importFile(plain, state.Opening{}); err != nil {
		t.Fatalf("the file itself: %v", err)
	}
}

func flip(b []byte, i int) []byte {
	out := append([]byte{}, b...)
	out[i] ^= 0x20
	return out
}

// resum writes a file's checksum line again, as someone altering it would.
func resum(b []byte) []byte {
	i := bytes.LastIndex(b, []byte("\nsha256 "))
	body := b[:i]
	return append(append([]byte{}, body...), []byte(checksumLine(body))...)
}

// resign writes a file's signature (its key id kept) and checksum again
// with the plane's key: a file altered by someone who holds the key.
func (p *plane) resign(b []byte) []byte { return signWith(b, p.sign[0]) }

// signWith writes a file's signature line again, HMAC-SHA256 with key
// under the key id the line had, and its checksum.
func signWith(b, key []byte) []byte {
	i := bytes.LastIndex(b, []byte("\nsha256 "))
	j := bytes.LastIndex(b[:i], []byte("\nsignature "))
	line := strings.Fields(string(b[j+len("\nsignature ") : i]))
	kid := "0000000000000000"
	if len(line) == 3 {
		kid = line[1]
	}
	h := hmac.New(sha256.New, key)
	h.Write(b[:j])
	out := append(append([]byte{}, b[:j]...), "\nsignature hmac-sha256 "+kid+" "+hex.EncodeToString(h.Sum(nil))...)
	return append(out, checksumLine(out)...)
}

func checksumLine(body []byte) string {
	sum := sha256.Sum256(body)
	return "\nsha256 " + hex.EncodeToString(sum[:]) + "\n"
}

// A plain file says what it is and holds the secrets: the operator is told
// so by the command; an encrypted one holds neither in any part.
func TestPlainFileIsReadable(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	p := newPlane(t, rdb, prefix, sealKey(t))
	p.populate()
	plain := p.export(state.Sealing{})
	if !bytes.HasPrefix(plain, []byte("invoicing-gateway-state 3 plain\n")) {
		t.Fatalf("head: %q", plain[:40])
	}
	if !bytes.Contains(plain, []byte(p.secrets["hook rotated"])) {
		t.Error("a plain export lacks the signing secrets it must restore")
	}
	for _, name := range []string{"active", "successor"} {
		if bytes.Contains(plain, []byte(p.secrets[name])) {
			t.Errorf("an export holds key %s's secret", name)
		}
	}
	var doc struct {
		Parts map[string]json.RawMessage `json:"parts"`
	}
	body := plain[len("invoicing-gateway-state 3 plain\n"):bytes.LastIndex(plain, []byte("\nsignature "))]
	if err := json.Unmarshal(body, &doc); err != nil || len(doc.Parts) != 3 || doc.Parts["audit"] != nil {
		t.Fatalf("the body is not the document: %v", err)
	}
	if !strings.Contains(string(doc.Parts["keys"]), `"sha256":`) {
		t.Error("keys are not exported by their hash")
	}
}
