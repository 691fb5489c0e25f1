package state

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"
)

// The file, byte for byte:
//
//	invoicing-gateway-state <format> <plain|age>\n
//	<body>
//	\nsignature hmac-sha256 <key id> <hex of HMAC-SHA256 of everything before this line>
//	\nsha256 <hex of everything before this line>\n
//
// The body is the document (JSON: Document) as is ("plain"), or an age file
// of it ("age", binary): encrypted to a passphrase (scrypt) or to
// recipients (X25519 or hybrid, "age1…"), and authenticated, so that a
// wrong passphrase or an altered byte is refused, never read. Encryption
// proves nothing of who wrote a file: a recipient is public, and whoever
// has it writes a file that opens. The signature does: an HMAC with a key
// only the operators hold (derived from webhookSecretsKey:
// seal.Keyring.FileKeys), checked before anything else is read; a
// gateway without a key writes "signature none". The key id (a hash of the
// key, which tells nothing of it) names which key signed, so that a file
// signed with a key no longer configured is told from one altered. The
// checksum line catches a truncated or damaged file first. Format 1 had no
// signature line: it is read as unsigned. Format 3 has no audit part (the
// audit log is in the gateway's database); formats 1 and 2 have one, which
// is imported (Part.ImportOnly).

// Format is the file's version; files of formats 1 (unsigned) and 2 (with
// the audit log) are read too, any other is refused.
const Format = 3

const (
	magic     = "invoicing-gateway-state"
	encPlain  = "plain"
	encAge    = "age"
	sumPrefix = "\nsha256 "
	sigPrefix = "\nsignature "
	sigHMAC   = "hmac-sha256"
	sigNone   = "none"
	// maxFile bounds what Read reads: far above the control plane of a
	// large deployment (about 400 bytes per key).
	maxFile = 4 << 30
)

// Document is the body: the gateway that wrote it, when, and each part by
// its name (keys, limits, webhooks; audit in files of formats 1 and 2), as
// the adapter that owns it lays it out, with the part's own version.
type Document struct {
	Format    int                        `json:"format"`
	CreatedAt time.Time                  `json:"createdAt"`
	Gateway   string                     `json:"gateway"`
	Parts     map[string]json.RawMessage `json:"parts"`
	// Signed is whether a key of Opening.SigningKeys vouched for the file;
	// false only for a file Opening.AcceptUnsigned let in.
	Signed bool `json:"-"`
}

// Errors of reading a file; each says what to do.
var (
	ErrNotAnExport = errors.New("not an export of the gateway's control plane")
	ErrTruncated   = errors.New("the file is truncated or damaged (its checksum does not match): take another export")
	ErrForeign     = errors.New("the file is of another format version")
	ErrNeedKey     = errors.New("the file is encrypted: give its passphrase (--passphrase-file) or an identity of a recipient (--identity)")
	ErrWrongKey    = errors.New("the passphrase or identity given does not open this file")
	ErrAltered     = errors.New("the file was altered: its encryption's authentication failed")
	// ErrForged: the signature does not match the file, whose checksum
	// does: it was changed, or written, by someone without the key.
	ErrForged = errors.New("the file's signature does not match its content: it was altered or forged after the export")
	// ErrNotOurs: signed with a key this gateway does not hold.
	ErrNotOurs = errors.New("the file is signed with a key this deployment does not hold: another deployment's export, a key rotated away " +
		"(put it back in webhookSecretsOldKeys), or a forgery")
	// ErrUnsigned: nothing proves where the file comes from.
	ErrUnsigned = errors.New("the file is not signed (an export of an older gateway, or of one without webhookSecretsKey): " +
		"nothing proves it is this deployment's. Import it only if you know where it comes from, with --accept-unsigned")
	// ErrCannotCheck: signed, but this gateway has no key to check it.
	ErrCannotCheck = errors.New("the file is signed, but this gateway has no webhookSecretsKey to check it with: " +
		"configure the deployment's key, or import it unchecked with --accept-unsigned")
)

// Sealing is how a file is encrypted: a passphrase, or recipients; neither
// writes the file in plain text.
type Sealing struct {
	Passphrase string
	Recipients []age.Recipient
	// WorkFactor is the passphrase's scrypt work factor (log2); zero means
	// age's default, 18 (about a second and 256 MiB).
	WorkFactor int
	// SigningKey signs the file (seal.Keyring.FileKeys' first); nil signs
	// nothing, and an import then needs Opening.AcceptUnsigned.
	SigningKey []byte
}

// Encrypted reports whether s encrypts.
func (s Sealing) Encrypted() bool { return s.Passphrase != "" || len(s.Recipients) > 0 }

// encode writes doc as a file.
func encode(w io.Writer, doc Document, s Sealing) error {
	body, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := encPlain
	if s.Encrypted() {
		enc = encAge
	}
	fmt.Fprintf(&buf, "%s %d %s\n", magic, Format, enc)
	if enc == encPlain {
		buf.Write(body)
	} else if err := seal(&buf, body, s); err != nil {
		return err
	}
	if s.SigningKey == nil {
		buf.WriteString(sigPrefix + sigNone)
	} else {
		buf.WriteString(sigPrefix + sigHMAC + " " + keyID(s.SigningKey) + " " + hex.EncodeToString(mac(s.SigningKey, buf.Bytes())))
	}
	sum := sha256.Sum256(buf.Bytes())
	buf.WriteString(sumPrefix + hex.EncodeToString(sum[:]) + "\n")
	_, err = w.Write(buf.Bytes())
	return err
}

// mac is the HMAC-SHA256 of b with key.
func mac(key, b []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(b)
	return h.Sum(nil)
}

// keyID names a signing key without telling anything of it: 8 bytes of
// its HMAC of a fixed text.
func keyID(key []byte) string { return hex.EncodeToString(mac(key, []byte("key id"))[:8]) }

func seal(w io.Writer, body []byte, s Sealing) error {
	rcpts := s.Recipients
	if s.Passphrase != "" {
		if len(rcpts) > 0 {
			return errors.New("a passphrase or recipients, not both")
		}
		r, err := age.NewScryptRecipient(s.Passphrase)
		if err != nil {
			return fmt.Errorf("encrypting the export: %w", err)
		}
		if s.WorkFactor > 0 {
			r.SetWorkFactor(s.WorkFactor)
		}
		rcpts = []age.Recipient{r}
	}
	aw, err := age.Encrypt(w, rcpts...)
	if err != nil {
		return fmt.Errorf("encrypting the export: %w", err)
	}
	if _, err := aw.Write(body); err != nil {
		return err
	}
	return aw.Close()
}

// Opening is what opens a file: the keys that check its signature, and a
// passphrase or identities when it is encrypted.
type Opening struct {
	Passphrase string
	Identities []age.Identity
	// SigningKeys check the file's signature (seal.Keyring.FileKeys).
	SigningKeys [][]byte
	// AcceptUnsigned lets in a file whose signature cannot be checked:
	// none (format 1, or a gateway without a key), or a key this one does
	// not hold. A signature that a key held does not match is refused
	// whatever this says.
	AcceptUnsigned bool
}

// decode reads a file whole, checks it and returns its document; nothing
// of it is trusted before its checksum, its signature, and its
// authentication when encrypted, hold.
func decode(r io.Reader, o Opening) (Document, error) {
	raw, err := io.ReadAll(io.LimitReader(r, maxFile+1))
	if err != nil {
		return Document{}, fmt.Errorf("reading the file: %w", err)
	}
	head, _, ok := bytes.Cut(raw, []byte("\n"))
	fields := strings.Fields(string(head))
	if !ok || len(fields) != 3 || fields[0] != magic {
		return Document{}, ErrNotAnExport
	}
	format, err := strconv.Atoi(fields[1])
	if err != nil || format < 1 || format > Format {
		return Document{}, fmt.Errorf("%w: it is format %s, this gateway reads formats 1 to %d", ErrForeign, fields[1], Format)
	}
	i := bytes.LastIndex(raw, []byte(sumPrefix))
	if i < len(head) || len(raw) > maxFile {
		return Document{}, ErrTruncated
	}
	want := strings.TrimSuffix(string(raw[i+len(sumPrefix):]), "\n")
	sum := sha256.Sum256(raw[:i])
	if want != hex.EncodeToString(sum[:]) {
		return Document{}, ErrTruncated
	}
	signed, end, err := checkSignature(raw[:i], len(head), format, o)
	if err != nil {
		return Document{}, err
	}
	body := raw[len(head)+1 : end]
	switch fields[2] {
	case encPlain:
	case encAge:
		if body, err = open(body, o); err != nil {
			return Document{}, err
		}
	default:
		return Document{}, fmt.Errorf("%w: unknown encryption %q", ErrForeign, fields[2])
	}
	var doc Document
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return Document{}, fmt.Errorf("%w: %w", ErrNotAnExport, err)
	}
	if doc.Format != format {
		return Document{}, fmt.Errorf("%w: its document is format %d, its head %d", ErrForeign, doc.Format, format)
	}
	doc.Signed = signed
	return doc, nil
}

// checkSignature checks the signature line of signed (the file before its
// checksum line; its head is headLen bytes): whether a key vouched for it,
// and where the body ends. A file of format 1 has no signature line.
func checkSignature(signed []byte, headLen, format int, o Opening) (bool, int, error) {
	if format == 1 {
		return false, len(signed), unchecked(ErrUnsigned, o)
	}
	j := bytes.LastIndex(signed, []byte(sigPrefix))
	if j < headLen {
		return false, 0, ErrTruncated
	}
	line := strings.Fields(string(signed[j+len(sigPrefix):]))
	switch {
	case len(line) == 1 && line[0] == sigNone:
		return false, j, unchecked(ErrUnsigned, o)
	case len(line) != 3 || line[0] != sigHMAC:
		return false, 0, fmt.Errorf("%w: unknown signature %q", ErrForeign, clip(strings.Join(line, " ")))
	case len(o.SigningKeys) == 0:
		return false, j, unchecked(ErrCannotCheck, o)
	}
	got, err := hex.DecodeString(line[2])
	if err != nil {
		return false, 0, ErrForged
	}
	for _, k := range o.SigningKeys {
		if keyID(k) == line[1] {
			if !hmac.Equal(got, mac(k, signed[:j])) {
				return false, 0, ErrForged
			}
			return true, j, nil
		}
	}
	return false, j, unchecked(fmt.Errorf("%w (key id %s)", ErrNotOurs, clip(line[1])), o)
}

// unchecked is err, unless the opening accepts a file it cannot check.
func unchecked(err error, o Opening) error {
	if o.AcceptUnsigned {
		return nil
	}
	return err
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func open(body []byte, o Opening) ([]byte, error) {
	ids := o.Identities
	if o.Passphrase != "" {
		id, err := age.NewScryptIdentity(o.Passphrase)
		if err != nil {
			return nil, err
		}
		ids = append([]age.Identity{id}, ids...)
	}
	if len(ids) == 0 {
		return nil, ErrNeedKey
	}
	r, err := age.Decrypt(bytes.NewReader(body), ids...)
	var noMatch *age.NoIdentityMatchError
	switch {
	case errors.As(err, &noMatch), errors.Is(err, age.ErrIncorrectIdentity):
		return nil, ErrWrongKey
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrAltered, err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAltered, err)
	}
	return out, nil
}
