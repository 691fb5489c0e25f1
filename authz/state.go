package authz

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/redisscan"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Export and import of the keys (state, `gateway state export|import`).
// What is exported is each key's record as Redis keeps it (store.go) with
// its SHA-256: never a secret, which is kept nowhere. The counts and the
// listing are made again from the records on import.

// StateVersion is the version of the keys' part of an export: the record's
// fields as store.go lays them out. An import refuses any other.
const StateVersion = 1

// State is the keys' part of an export.
type State struct {
	Version int         `json:"version"`
	Keys    []KeyRecord `json:"keys"`
}

// KeyRecord is one key: its SHA-256 (hex) and its record's fields (id,
// company, mode, scopes, name, hint, created, state, and when set
// revoked_at, expires, replaces, replaced_by, last_used, cidrs, checksum;
// times in Unix milliseconds).
type KeyRecord struct {
	SHA256 string            `json:"sha256"`
	Fields map[string]string `json:"fields"`
}

// recordFields are the fields a record may have.
var recordFields = []string{"id", "company", "mode", "scopes", "name", "hint", "created", "state",
	"revoked_at", "expires", "replaces", "replaced_by", "last_used", "cidrs", "checksum"}

// ExportState reads every key record. Each is read whole, at one instant;
// the records of a roll are read again until they agree (a roll's
// successor is written before its predecessor is marked), so that the
// export never holds a successor beside a predecessor that does not know
// it was rolled.
func (k *Keyring) ExportState(ctx context.Context) (State, error) {
	names, err := redisscan.Keys(ctx, k.rdb, k.l.p+"key:*")
	if err != nil {
		return State{}, unavailable("export", err)
	}
	byID := map[string]KeyRecord{}
	if err := k.readRecords(ctx, names, byID); err != nil {
		return State{}, err
	}
	for range 3 {
		var again []string
		for _, r := range byID {
			if p, ok := byID[r.Fields["replaces"]]; ok && p.Fields["replaced_by"] == "" {
				again = append(again, k.l.record(p.SHA256))
			}
		}
		if len(again) == 0 {
			break
		}
		if err := k.readRecords(ctx, again, byID); err != nil {
			return State{}, err
		}
	}
	s := State{Version: StateVersion, Keys: make([]KeyRecord, 0, len(byID))}
	for _, r := range byID {
		s.Keys = append(s.Keys, r)
	}
	slices.SortFunc(s.Keys, func(a, b KeyRecord) int { return cmpStr(a.Fields["id"], b.Fields["id"]) })
	return s, nil
}

// readRecords reads records (Redis keys) into byID, by pipelines of 1,000.
func (k *Keyring) readRecords(ctx context.Context, names []string, byID map[string]KeyRecord) error {
	for chunk := range slices.Chunk(names, 1000) {
		pipe := k.rdb.Pipeline()
		cmds := make([]*redis.MapStringStringCmd, len(chunk))
		for i, n := range chunk {
			cmds[i] = pipe.HGetAll(ctx, n)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return unavailable("export", err)
		}
		for i, c := range cmds {
			m := c.Val()
			if len(m) == 0 { // gone meanwhile (an undone creation)
				continue
			}
			if _, _, err := decodeRecord(m); err != nil {
				return fmt.Errorf("authz: export: %w", err)
			}
			byID[m["id"]] = KeyRecord{SHA256: chunk[i][len(k.l.p+"key:"):], Fields: m}
		}
	}
	return nil
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ErrInvalidState: a part of an export that cannot be imported (a foreign
// version, a record that is not one, or one that Create would refuse).
// Nothing is written.
var ErrInvalidState = errors.New("invalid record")

// check refuses a record that is not one the keyring could have written.
func (r KeyRecord) check() error {
	if d, err := hex.DecodeString(r.SHA256); err != nil || len(d) != len(digest{}) {
		return fmt.Errorf("%w: sha256 %q is not a SHA-256", ErrInvalidState, clip(r.SHA256))
	}
	for f := range r.Fields {
		if !slices.Contains(recordFields, f) {
			return fmt.Errorf("%w: key %s: unknown field %q", ErrInvalidState, clip(r.Fields["id"]), clip(f))
		}
	}
	if !validKeyID(r.Fields["id"]) {
		return fmt.Errorf("%w: key id %q", ErrInvalidState, clip(r.Fields["id"]))
	}
	key, _, err := decodeRecord(r.Fields)
	if err != nil { // said as the import's, not as a record of Redis's
		why := strings.TrimPrefix(err.Error(), errCorrupt.Error()+" "+r.Fields["id"]+": ")
		return fmt.Errorf("%w: key %s: %s", ErrInvalidState, r.Fields["id"], why)
	}
	bad := func(f string, a ...any) error {
		return fmt.Errorf("%w: key %s: %s", ErrInvalidState, key.ID, fmt.Sprintf(f, a...))
	}
	for _, f := range []string{"revoked_at", "expires", "last_used"} {
		if v, ok := r.Fields[f]; ok {
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return bad("%s %q", f, clip(v))
			}
		}
	}
	// As Create would refuse them: the company, the name, and what names
	// other keys.
	if c, ok := invoicing.CanonicalUUID(key.CompanyID); !ok || c != key.CompanyID {
		return bad("company %q is not a company id (a UUID in lower case)", clip(key.CompanyID))
	}
	if !key.Scopes.valid() {
		return bad("scopes %q", clip(r.Fields["scopes"]))
	}
	if !validCIDRs(key.AllowedCIDRs) {
		return bad("networks: at most %d, each a network", MaxCIDRs)
	}
	if !validName(key.Name) {
		return bad("name: must be at most %d bytes of printable text, with no invisible or direction-changing character", MaxNameLen)
	}
	if invoicing.HoldsSecret(key.Name) {
		return bad("name: must not hold what looks like an API key or a webhook signing secret")
	}
	for f, id := range map[string]string{"replaces": key.Replaces, "replaced_by": key.ReplacedBy} {
		if id != "" && !validKeyID(id) {
			return bad("%s %q is not a key id", f, clip(id))
		}
	}
	if !validHint(key.Hint, key.Mode) {
		return bad("hint %q is not the prefix and last characters of a key of its mode", clip(key.Hint))
	}
	return nil
}

// validHint reports whether h is a hint that hint makes for a key of mode
// m: its prefix, "…" and hintTail base62 characters.
func validHint(h string, m invoicing.Mode) bool {
	prefix := livePrefix
	if m == invoicing.Test {
		prefix = testPrefix
	}
	tail, ok := strings.CutPrefix(h, prefix+"…")
	if !ok || len(tail) != hintTail {
		return false
	}
	for i := range len(tail) {
		if !strings.Contains(base62Digits, tail[i:i+1]) {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// membership is where a key counts: counted (active, not rolled), rolled
// (in its overlap), or neither.
func membership(m map[string]string, now time.Time) int {
	key, _, err := decodeRecord(m)
	if err != nil || key.Status(now) != StateActive {
		return -1
	}
	if key.ReplacedBy != "" {
		return rolledSet
	}
	return countedSet
}

// Records is how many keys s holds.
func (s State) Records() int { return len(s.Keys) }
