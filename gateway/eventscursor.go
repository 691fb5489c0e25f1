package gateway

import (
	"encoding/base64"
	"encoding/binary"

	"github.com/invoicing-ao/gateway/invoicing"
)

// The events feed's cursors: a feed position (the recording's millisecond
// and sequence) instead of a list's (time, id), with the same MAC over what
// the walk is (company, mode, route, order and filters), so that a cursor
// is as opaque and unforgeable as a list's. Its version byte (2) keeps it
// from ever reading as a list's cursor, and the other way round.
//
// Layout before base64url: version (1), milliseconds (8, big endian),
// sequence (8), MAC (16).
const (
	feedCursorVersion = 2
	feedCursorLen     = 1 + 8 + 8 + 16
)

func (kr cursorKeyring) encodeFeedCursor(p *invoicing.FeedPosition, sc cursorScope) *string {
	if p == nil {
		return nil
	}
	b := make([]byte, 0, feedCursorLen)
	b = append(b, feedCursorVersion)
	b = binary.BigEndian.AppendUint64(b, p.Ms)
	b = binary.BigEndian.AppendUint64(b, p.Seq)
	b = append(b, cursorMAC(kr[0], b, sc)...)
	c := base64.RawURLEncoding.EncodeToString(b)
	return &c
}

func (kr cursorKeyring) decodeFeedCursor(c string, sc cursorScope) (*invoicing.FeedPosition, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) != feedCursorLen || b[0] != feedCursorVersion {
		return nil, false
	}
	if !kr.check(b[:feedCursorLen-16], b[feedCursorLen-16:], sc) {
		return nil, false
	}
	return &invoicing.FeedPosition{Ms: binary.BigEndian.Uint64(b[1:9]), Seq: binary.BigEndian.Uint64(b[9:17])}, true
}
