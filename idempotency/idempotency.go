// Package idempotency remembers, in Redis, the final answers of requests sent
// with an Idempotency-Key, and which such requests are running, so that a
// retried request is answered with what the first one answered instead of
// being done twice. It knows nothing of HTTP beyond storing a status, a media
// type, a body and a Location as bytes; the caller decides what is final.
package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// ErrUnavailable wraps the error of a Redis that cannot answer.
var ErrUnavailable = errors.New("idempotency: Redis unavailable")

// Config configures a Store. Every zero value has a working default.
type Config struct {
	// Redis keeps the records; required. A record's key carries the company
	// as its hash tag.
	Redis redis.UniversalClient
	// Prefix starts every key; zero means "idem:". No braces.
	Prefix string
	// TTL is how long a final answer is kept; zero means 24h.
	TTL time.Duration
	// LockTTL is how long a running request holds its key before another
	// attempt may run: longer than any request may take (the server's write
	// timeout); zero means 30s.
	LockTTL time.Duration
}

// Scope names one idempotency key: a key is the caller's own within its
// company and mode, so two companies (or LIVE and TEST) may use the same one.
type Scope struct {
	Company string         // canonical company id
	Mode    invoicing.Mode // the key's mode
	Key     string         // the Idempotency-Key header's value
}

// Answer is a final answer as written to the caller.
type Answer struct {
	Status      int
	ContentType string
	Body        []byte
	Location    string
}

// State is what Begin found.
type State uint8

const (
	// Started: nothing was known of the key; the caller runs the request
	// and ends with Finish or Abandon, passing Outcome.Token.
	Started State = iota + 1
	// Done: a final answer is stored for the same request: answer it again.
	Done
	// Running: the same request is running now, elsewhere or here.
	Running
	// Reused: the key was used for a different request.
	Reused
)

// Outcome is Begin's answer.
type Outcome struct {
	State  State
	Token  string // Started: the claim, for Finish and Abandon
	Answer Answer // Done: the stored answer
}

// Store keeps the records. It is safe for concurrent use.
type Store struct {
	rdb          redis.UniversalClient
	prefix       string
	ttl, lockTTL time.Duration
}

// New returns a Store on cfg.
func New(cfg Config) *Store {
	if cfg.Redis == nil {
		panic("idempotency: Config.Redis is required")
	}
	s := &Store{rdb: cfg.Redis, prefix: cfg.Prefix, ttl: cfg.TTL, lockTTL: cfg.LockTTL}
	if s.prefix == "" {
		s.prefix = "idem:"
	}
	if s.ttl <= 0 {
		s.ttl = 24 * time.Hour
	}
	if s.lockTTL <= 0 {
		s.lockTTL = 30 * time.Second
	}
	return s
}

// key is the record's Redis key. The caller's key is hashed: it may hold any
// printable character, braces included, which would break the hash tag.
func (s *Store) key(sc Scope) string {
	h := sha256.Sum256([]byte(sc.Key))
	return s.prefix + "{" + sc.Company + "}:" + sc.Mode.Lower() + ":" + hex.EncodeToString(h[:])
}

// Fingerprint identifies a request: the same key with another fingerprint is
// another request. parts are, for example, method, path and body.
func Fingerprint(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p)) + ":")) // no two part lists hash alike
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// The record is a hash: state ("running" or "done"), fp, token while
// running, and status, type, body, location once done.
//
// beginScript claims an unknown key for a running request (ARGV: token, fp,
// lock ms) or returns the record as it is.
var beginScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'state', 'running', 'token', ARGV[1], 'fp', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {'started'}
end
return redis.call('HMGET', KEYS[1], 'state', 'fp', 'status', 'type', 'body', 'location')`)

// Begin looks the key up and, when it is unknown, claims it for this request
// (fingerprint fp). A Redis that cannot answer is ErrUnavailable.
func (s *Store) Begin(ctx context.Context, sc Scope, fp string) (Outcome, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	v, err := beginScript.Run(ctx, s.rdb, []string{s.key(sc)}, token, fp, s.lockTTL.Milliseconds()).Slice()
	if err != nil {
		return Outcome{}, fmt.Errorf("%w: begin: %w", ErrUnavailable, err)
	}
	str := func(i int) string {
		if i < len(v) {
			s, _ := v[i].(string)
			return s
		}
		return ""
	}
	switch {
	case str(0) == "started":
		return Outcome{State: Started, Token: token}, nil
	case str(1) != fp:
		return Outcome{State: Reused}, nil
	case str(0) == "running":
		return Outcome{State: Running}, nil
	}
	status, err := strconv.Atoi(str(2))
	if err != nil || str(0) != "done" {
		return Outcome{}, fmt.Errorf("idempotency: malformed record (state %q)", invoicing.Clip(str(0)))
	}
	return Outcome{State: Done, Answer: Answer{Status: status, ContentType: str(3), Body: []byte(str(4)), Location: str(5)}}, nil
}

// finishScript stores the final answer (ARGV: fp, ttl ms, status, type,
// body, location) unless one is stored already: the first final answer
// stays, whichever attempt wrote it (attempts of one request answer alike).
var finishScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'state') == 'done' then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'state', 'done', 'fp', ARGV[1], 'status', ARGV[3], 'type', ARGV[4], 'body', ARGV[5], 'location', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`)

// Finish stores the final answer of the request with fingerprint fp.
func (s *Store) Finish(ctx context.Context, sc Scope, fp string, a Answer) error {
	err := finishScript.Run(ctx, s.rdb, []string{s.key(sc)}, fp, s.ttl.Milliseconds(),
		a.Status, a.ContentType, a.Body, a.Location).Err()
	if err != nil {
		return fmt.Errorf("%w: finish: %w", ErrUnavailable, err)
	}
	return nil
}

// abandonScript forgets a running claim if it is still token's.
var abandonScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'state') == 'running' and redis.call('HGET', KEYS[1], 'token') == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
return 1`)

// Abandon forgets the claim of a request whose outcome is not final (the
// database was never asked, or did not answer), so that a retry runs afresh.
func (s *Store) Abandon(ctx context.Context, sc Scope, token string) error {
	if err := abandonScript.Run(ctx, s.rdb, []string{s.key(sc)}, token).Err(); err != nil {
		return fmt.Errorf("%w: abandon: %w", ErrUnavailable, err)
	}
	return nil
}

// ResourceID is the id of the resource of kind ("client") that the request
// with this scope creates: a UUID (version 8, RFC 9562) derived from the
// company, the mode and the key, so that every attempt of one request
// creates the same id and the database itself refuses a second row, even
// when Redis lost the record or an attempt's outcome was never known.
func ResourceID(sc Scope, kind string) string {
	h := sha256.Sum256([]byte("invoicing-gateway idempotency\x00" + kind + "\x00" + sc.Company + "\x00" + string(sc.Mode) + "\x00" + sc.Key))
	b := h[:16]
	b[6] = b[6]&0x0f | 0x80 // version 8: custom
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
