package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/invoicing-ao/gateway/idempotency"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
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
func (s *Server) createClient(r *http.Request, c apiCall, _ web.Params) (web.Answer, error) {
	if err := web.ParseQuery(r.URL.RawQuery).Err(); err != nil {
		return web.Answer{}, err
	}
	key, keyed, err := idempotencyKey(r.Header)
	if err != nil {
		return web.Answer{}, err
	}
	body, err := web.ReadBody(r)
	if err != nil {
		return web.Answer{}, err
	}
	nc, invalid := decodeNewClient(body)
	if keyed {
		return s.createOnce(r, c, key, body, nc, invalid)
	}
	if invalid != nil {
		return web.Answer{}, invalid
	}
	return s.insert(r, c, nc)
}

// insert creates nc in the caller's company and mode, within the in-flight cap.
func (s *Server) insert(r *http.Request, c apiCall, nc invoicing.NewClient) (web.Answer, error) {
	slot, err := s.acquire(r, c)
	if err != nil {
		return web.Answer{}, err
	}
	defer slot.Release()
	cl, err := s.store(c.mode).CreateClient(r.Context(), c.company, nc)
	if err != nil {
		// A NIF the company has already is answered with the client that
		// has it: the error says which (web.Answers.Problem).
		return web.Answer{}, err
	}
	return web.Answer{Status: http.StatusCreated, Body: cl, Location: apiPrefix + "/clients/" + cl.ID}, nil
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
	bad := &web.Error{Code: "invalid_parameter", Detail: "Idempotency-Key must be one value of 1 to 255 printable ASCII characters.",
		Fields: []web.FieldError{{Field: "Idempotency-Key", Message: "must be 1 to 255 printable ASCII characters, sent once"}}}
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
func (s *Server) createOnce(r *http.Request, c apiCall, key string, body []byte, nc invoicing.NewClient, invalid error) (web.Answer, error) {
	sc := idempotency.Scope{Company: c.company, Mode: c.mode, Key: key}
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
			return web.Answer{}, &web.Error{Code: "idempotency_in_progress", RetryAfter: time.Second,
				Detail: "A request with this Idempotency-Key is still running; retry after the Retry-After delay to get its answer."}
		case o.State == idempotency.Reused:
			return web.Answer{}, errKeyReused
		default:
			token = o.Token
		}
	}
	ans, err := web.Answer{}, invalid
	if invalid == nil {
		nc.ID = idempotency.ResourceID(sc, "client")
		ans, err = s.insert(r, c, nc)
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
	a := render(ans, err, c.st.ID())
	_ = s.idem.Finish(ctx, sc, fp, a) // if it fails, a retry meets its own row
	if err != nil {
		// The problem a encodes, so that the layers outside log and trace
		// its code as they do for an answer written from the error.
		err = answers.Problem(err)
	}
	return stored(a, ans.Replayed), err
}

// render encodes what the public listener writes for (ans, err), for
// storing: a JSON body, or err's problem (with requestID in it).
func render(ans web.Answer, err error, requestID string) idempotency.Answer {
	status, ctype, body := answers.Encode(ans, err, requestID)
	a := idempotency.Answer{Status: status, ContentType: ctype, Body: body}
	if ctype == "application/json" { // not a problem: the resource's own
		a.Location = ans.Location
	}
	return a
}

// stored is the answer that writes a, replayed or not.
func stored(a idempotency.Answer, replayed bool) web.Answer {
	return web.Answer{Status: a.Status, Raw: a.Body, ContentType: a.ContentType, Location: a.Location, Replayed: replayed}
}

var errKeyReused = &web.Error{Code: "idempotency_key_reused",
	Detail: "This Idempotency-Key was used for a different request; use a new key for a new request."}

// ownRow turns the database's "a client has this id" into the answer of the
// attempt that made it, when the client is the one this request describes;
// otherwise the key was used for another request.
func ownRow(ans web.Answer, err error, nc invoicing.NewClient) (web.Answer, error) {
	var ex invoicing.ClientExists
	if !errors.As(err, &ex) {
		return ans, err
	}
	c := ex.ExistingClient()
	if !sameClient(c, nc) {
		return web.Answer{}, errKeyReused
	}
	return web.Answer{Status: http.StatusCreated, Body: c, Location: apiPrefix + "/clients/" + c.ID, Replayed: true}, nil
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
	code := web.Problem(err).Code
	return code == "invalid_body" || code == "nif_conflict"
}
