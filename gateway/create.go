package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/invoicing-ao/gateway/idempotency"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Idempotency remembers the final answers of creates sent with an
// Idempotency-Key (idempotency.Store).
type Idempotency interface {
	Begin(ctx context.Context, sc idempotency.Scope, fp string) (idempotency.Outcome, error)
	Finish(ctx context.Context, sc idempotency.Scope, fp string, a idempotency.Answer) error
	Abandon(ctx context.Context, sc idempotency.Scope, token string) error
}

// createClient creates a client. With an Idempotency-Key, retries of one
// create never make a second client and are answered what the first
// attempt answered (createOnce).
func (s *Server) createClient(r *http.Request, st *reqState, _ httprouter.Params) (answer, error) {
	if err := parseQuery(r.URL.RawQuery).err(); err != nil {
		return answer{}, err
	}
	key, keyed, err := idempotencyKey(r.Header)
	if err != nil {
		return answer{}, err
	}
	body, err := readBody(r)
	if err != nil {
		return answer{}, err
	}
	nc, invalid := decodeNewClient(body)
	if keyed {
		return s.createOnce(r, st, key, body, nc, invalid)
	}
	if invalid != nil {
		return answer{}, invalid
	}
	return s.insert(r, st, nc)
}

// insert creates nc in the caller's company and mode, within the in-flight cap.
func (s *Server) insert(r *http.Request, st *reqState, nc invoicing.NewClient) (answer, error) {
	slot, err := s.acquire(r, st)
	if err != nil {
		return answer{}, err
	}
	defer slot.Release()
	c, err := s.store(st.Key.Mode).CreateClient(r.Context(), st.Key.CompanyID, nc)
	if err != nil {
		// A NIF the company has already is answered with the client that
		// has it: the error says which (problemFor).
		return answer{}, err
	}
	return answer{status: http.StatusCreated, body: c, location: apiPrefix + "/clients/" + c.ID}, nil
}

// maxIdempotencyKey bounds the Idempotency-Key header (Stripe's bound).
const maxIdempotencyKey = 255

// idempotencyKey reads the optional Idempotency-Key header: one value of
// 1-255 printable ASCII characters.
func idempotencyKey(h http.Header) (key string, ok bool, err error) {
	vs := h.Values("Idempotency-Key")
	if len(vs) == 0 {
		return "", false, nil
	}
	bad := &Error{Code: "invalid_parameter", Detail: "Idempotency-Key must be one value of 1 to 255 printable ASCII characters.",
		Fields: []FieldError{{"Idempotency-Key", "must be 1 to 255 printable ASCII characters, sent once"}}}
	if len(vs) > 1 || len(vs[0]) == 0 || len(vs[0]) > maxIdempotencyKey {
		return "", false, bad
	}
	for i := 0; i < len(vs[0]); i++ {
		if c := vs[0][i]; c < 0x20 || c > 0x7e {
			return "", false, bad
		}
	}
	return vs[0], true, nil
}

// createOnce is a create sent with an Idempotency-Key. The first attempt
// runs; its final answer (201, or the 400 or 409 the request deserves) is
// stored and given again, byte for byte, to every retry of the same request.
// Answers where the database never acted or never answered (breaker open,
// in-flight cap, timeout) are not stored: the retry runs afresh.
//
// The client's id is derived from company, mode and key, so the database
// refuses a second row whatever Redis knows: a retry that meets its own row
// (the first attempt's outcome was never known, or Redis lost the record, or
// cannot answer) answers that client as a replay.
func (s *Server) createOnce(r *http.Request, st *reqState, key string, body []byte, nc invoicing.NewClient, invalid error) (answer, error) {
	sc := idempotency.Scope{Company: st.Key.CompanyID, Mode: st.Key.Mode, Key: key}
	fp := idempotency.Fingerprint([]byte(r.URL.Path), body)
	var token string // our claim; empty when Redis could not be asked
	if s.idem != nil {
		o, err := s.idem.Begin(r.Context(), sc, fp)
		switch {
		case err != nil:
			// Without Redis the database still refuses a second row.
		case o.State == idempotency.Done:
			return stored(o.Answer, true), nil
		case o.State == idempotency.Running:
			return answer{}, &Error{Code: "idempotency_in_progress", RetryAfter: time.Second,
				Detail: "A request with this Idempotency-Key is still running; retry after the Retry-After delay to get its answer."}
		case o.State == idempotency.Reused:
			return answer{}, errKeyReused
		default:
			token = o.Token
		}
	}
	ans, err := answer{}, invalid
	if invalid == nil {
		nc.ID = idempotency.ResourceID(sc, "client")
		ans, err = s.insert(r, st, nc)
		ans, err = ownRow(ans, err, nc)
	}
	if token == "" {
		return ans, err
	}
	// Redis is asked on behalf of the request even if its caller left.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 2*time.Second)
	defer cancel()
	if !final(err) {
		_ = s.idem.Abandon(ctx, sc, token) // if it fails, the claim expires
		return ans, err
	}
	a := render(ans, err, st.ID)
	_ = s.idem.Finish(ctx, sc, fp, a) // if it fails, a retry meets its own row
	if err != nil {
		// The problem a encodes, so that the layers outside log and trace
		// its code as they do for an answer written from the error.
		err = problemFor(err)
	}
	return stored(a, ans.replayed), err
}

var errKeyReused = &Error{Code: "idempotency_key_reused",
	Detail: "This Idempotency-Key was used for a different request; use a new key for a new request."}

// ownRow turns the database's "a client has this id" into the answer of the
// attempt that made it, when the client is the one this request describes;
// otherwise the key was used for another request.
func ownRow(ans answer, err error, nc invoicing.NewClient) (answer, error) {
	var ex invoicing.ClientExists
	if !errors.As(err, &ex) {
		return ans, err
	}
	c := ex.ExistingClient()
	if !sameClient(c, nc) {
		return answer{}, errKeyReused
	}
	return answer{status: http.StatusCreated, body: c, location: apiPrefix + "/clients/" + c.ID, replayed: true}, nil
}

// sameClient reports whether c is what nc (normalized) creates.
func sameClient(c invoicing.Client, nc invoicing.NewClient) bool {
	eq := func(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	return c.Name == nc.Name && eq(c.NIF, nc.NIF) && eq(c.Email, nc.Email) && eq(c.Phone, nc.Phone) &&
		eq(c.Address, nc.Address) && eq(c.Type, nc.Type)
}

// final reports whether an outcome is the request's for good: created, or
// refused for what it is (invalid body, NIF taken).
func final(err error) bool {
	if err == nil {
		return true
	}
	code := problemOf(err).Code
	return code == "invalid_body" || code == "nif_conflict"
}
