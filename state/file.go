package state

import (
	"bytes"
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
//	\nsha256 <hex of everything before this line>\n
//
// The body is the document (JSON: Document) as is ("plain"), or an age file
// of it ("age", binary): encrypted to a passphrase (scrypt) or to
// recipients (X25519 or hybrid, "age1…"), and authenticated, so that a
// wrong passphrase or an altered byte is refused, never read. The checksum
// line catches a truncated or damaged file before anything else, and is all
// a plain file has: it holds against accidents, not against someone who can
// write the file (whose signing secrets a plain file shows anyway).

// Format is the file's version; a file of another is refused.
const Format = 1

const (
	magic     = "invoicing-gateway-state"
	encPlain  = "plain"
	encAge    = "age"
	sumPrefix = "\nsha256 "
	// maxFile bounds what Read reads: far above the control plane of a
	// large deployment (about 400 bytes per key).
	maxFile = 4 << 30
)

// Document is the body: the gateway that wrote it, when, and each part by
// its name (keys, limits, webhooks, audit), as the adapter that owns it
// lays it out, with the part's own version.
type Document struct {
	Format    int                        `json:"format"`
	CreatedAt time.Time                  `json:"createdAt"`
	Gateway   string                     `json:"gateway"`
	Parts     map[string]json.RawMessage `json:"parts"`
}

// Errors of reading a file; each says what to do.
var (
	ErrNotAnExport = errors.New("state: not an export of the gateway's control plane")
	ErrTruncated   = errors.New("state: the file is truncated or damaged (its checksum does not match): take another export")
	ErrForeign     = errors.New("state: the file is of another format version")
	ErrNeedKey     = errors.New("state: the file is encrypted: give its passphrase (--passphrase-file) or an identity of a recipient (--identity)")
	ErrWrongKey    = errors.New("state: the passphrase or identity given does not open this file")
	ErrAltered     = errors.New("state: the file was altered: its encryption's authentication failed")
)

// Sealing is how a file is encrypted: a passphrase, or recipients; neither
// writes the file in plain text.
type Sealing struct {
	Passphrase string
	Recipients []age.Recipient
	// WorkFactor is the passphrase's scrypt work factor (log2); zero means
	// age's default, 18 (about a second and 256 MiB).
	WorkFactor int
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
	sum := sha256.Sum256(buf.Bytes())
	buf.WriteString(sumPrefix + hex.EncodeToString(sum[:]) + "\n")
	_, err = w.Write(buf.Bytes())
	return err
}

func seal(w io.Writer, body []byte, s Sealing) error {
	rcpts := s.Recipients
	if s.Passphrase != "" {
		if len(rcpts) > 0 {
			return errors.New("state: a passphrase or recipients, not both")
		}
		r, err := age.NewScryptRecipient(s.Passphrase)
		if err != nil {
			return fmt.Errorf("state: %w", err)
		}
		if s.WorkFactor > 0 {
			r.SetWorkFactor(s.WorkFactor)
		}
		rcpts = []age.Recipient{r}
	}
	aw, err := age.Encrypt(w, rcpts...)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if _, err := aw.Write(body); err != nil {
		return err
	}
	return aw.Close()
}

// Opening is what opens an encrypted file: a passphrase, or identities.
type Opening struct {
	Passphrase string
	Identities []age.Identity
}

// decode reads a file whole, checks it and returns its document; nothing
// of it is trusted before its checksum, and its authentication when
// encrypted, hold.
func decode(r io.Reader, o Opening) (Document, error) {
	raw, err := io.ReadAll(io.LimitReader(r, maxFile+1))
	if err != nil {
		return Document{}, fmt.Errorf("state: reading the file: %w", err)
	}
	head, rest, ok := bytes.Cut(raw, []byte("\n"))
	fields := strings.Fields(string(head))
	if !ok || len(fields) != 3 || fields[0] != magic {
		return Document{}, ErrNotAnExport
	}
	if v, err := strconv.Atoi(fields[1]); err != nil || v != Format {
		return Document{}, fmt.Errorf("%w: it is format %s, this gateway reads format %d", ErrForeign, fields[1], Format)
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
	body := rest[:i-len(head)-1]
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
	if doc.Format != Format {
		return Document{}, fmt.Errorf("%w: its document is format %d, this gateway reads format %d", ErrForeign, doc.Format, Format)
	}
	return doc, nil
}

func open(body []byte, o Opening) ([]byte, error) {
	ids := o.Identities
	if o.Passphrase != "" {
		id, err := age.NewScryptIdentity(o.Passphrase)
		if err != nil {
			return nil, fmt.Errorf("state: %w", err)
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
