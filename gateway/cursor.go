package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// Cursors are opaque to callers: a list's position (the last item's sort
// time and id) with a MAC over it and over what the list was (company, mode,
// route, filters). A cursor used with another company, mode, list or filter,
// or altered in any byte, fails its MAC and is refused; the position itself
// is not secret (it is the caller's own data), only unforgeable.
//
// Layout before base64url: version (1), flags (1: bit 0 = has a time),
// time in Unix microseconds (8, big endian), id (16: the UUID's bytes),
// MAC (16: HMAC-SHA256 truncated).
const (
	cursorVersion = 1
	cursorLen     = 1 + 1 + 8 + 16 + 16
)

// cursorKeyring is what a request's cursors are made and checked with: the
// first key makes them, any of them checks them (the deployment's key was
// replaced while this instance ran: what the one before made is still
// taken).
type cursorKeyring [][]byte

// CursorKeys gives the deployment's cursor keys when no CursorSecret is
// configured (sharedkey.Key: made once in Redis and shared by every
// instance): the key in force first, then any other still taken.
type CursorKeys interface {
	Keys(ctx context.Context) ([][]byte, error)
}

// cursorKeys is the keyring of a request: the configured secret, the
// deployment's keys, or this process's own. Without it no cursor can be
// made or checked: the list is not served (503), rather than with cursors
// another instance would refuse.
func (s *Server) cursorKeys(ctx context.Context) (cursorKeyring, error) {
	if s.sharedKeys == nil {
		return s.cursorKey, nil
	}
	keys, err := s.sharedKeys.Keys(ctx)
	if err != nil {
		return nil, &web.Error{Code: "not_ready", Detail: "The gateway cannot read the key of its cursors from Redis yet; retry later.",
			RetryAfter: time.Second, Err: err}
	}
	return keys, nil
}

// cursorScope is what a cursor is bound to.
type cursorScope struct {
	company string
	mode    invoicing.Mode
	list    string // the route
	filter  string // the filter's canonical form (filterKey)
}

func (c cursorScope) bytes() []byte {
	return []byte(c.company + "\x00" + string(c.mode) + "\x00" + c.list + "\x00" + c.filter)
}

// encodeCursor is the cursor of position p in the list of scope.
func (kr cursorKeyring) encodeCursor(p *invoicing.Position, sc cursorScope) *string {
	if p == nil {
		return nil
	}
	b := make([]byte, 0, cursorLen)
	b = append(b, cursorVersion, 0)
	var at int64
	if p.At != nil {
		b[1] = 1
		at = p.At.UnixMicro()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	id, _ := hex.DecodeString(strings.ReplaceAll(p.ID, "-", "")) // a canonical UUID: 16 bytes
	b = append(b, id...)
	b = append(b, cursorMAC(kr[0], b, sc)...)
	c := base64.RawURLEncoding.EncodeToString(b)
	return &c
}

// decodeCursor reads a cursor of the list of scope; false when it is not one.
func (kr cursorKeyring) decodeCursor(c string, sc cursorScope) (*invoicing.Position, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) != cursorLen || b[0] != cursorVersion || b[1] > 1 {
		return nil, false
	}
	if !kr.check(b[:cursorLen-16], b[cursorLen-16:], sc) {
		return nil, false
	}
	p := &invoicing.Position{}
	if b[1] == 1 {
		t := time.UnixMicro(int64(binary.BigEndian.Uint64(b[2:10]))).UTC()
		p.At = &t
	}
	h := hex.EncodeToString(b[10:26])
	p.ID = h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	return p, true
}

// check reports whether mac is body's under one of the keys.
func (kr cursorKeyring) check(body, mac []byte, sc cursorScope) bool {
	for _, k := range kr {
		if hmac.Equal(mac, cursorMAC(k, body, sc)) {
			return true
		}
	}
	return false
}

func cursorMAC(key, body []byte, sc cursorScope) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	m.Write(sc.bytes())
	return m.Sum(nil)[:16]
}
