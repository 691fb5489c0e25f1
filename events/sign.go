package events

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// secretPrefix starts every signing secret, as Standard Webhooks' libraries
// expect it.
const secretPrefix = "whsec_"

// newSecret makes a signing secret: 32 random bytes (the HMAC-SHA256 key).
func newSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return secretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

var errSecret = errors.New("events: malformed signing secret")

// secretKey is the HMAC key of a secret.
func secretKey(secret string) ([]byte, error) {
	raw, ok := strings.CutPrefix(secret, secretPrefix)
	if !ok {
		return nil, errSecret
	}
	k, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(k) == 0 {
		return nil, errSecret
	}
	return k, nil
}

// signature is the webhook-signature header of a delivery: one "v1,<base64
// HMAC-SHA256 of id.timestamp.body>" per key, space-separated (the current
// secret first, then a rotated one still in its overlap).
func signature(keys [][]byte, id string, at time.Time, body []byte) string {
	ts := strconv.FormatInt(at.Unix(), 10)
	var sb strings.Builder
	for i, k := range keys {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(id))
		m.Write([]byte{'.'})
		m.Write([]byte(ts))
		m.Write([]byte{'.'})
		m.Write(body)
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString("v1,")
		sb.WriteString(base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return sb.String()
}
