package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// retrying is the HttpRequestDoer behind the generated client: it sends a
// request again after a 429, a 503, or a 409 idempotency_in_progress (an
// earlier attempt with the same Idempotency-Key still running: the retry gets
// its answer), as the OpenAPI document's Rate limits guide asks
// (gateway/apidocs/openapi.yaml):
//   - it waits Retry-After (at least 1 s; 1 s when absent), and on each
//     further retry of the same call at least twice the previous wait, plus
//     up to 10 % at random so that many clients do not retry in step;
//   - at most maxRetries times, and never a wait over maxWait: then the
//     answer is returned as it is, to become the caller's *Problem;
//   - a 429 is always retried (the gateway refused it before doing
//     anything); a 503 only for a GET, or a POST that carries an
//     Idempotency-Key (a create that timed out in the database may have
//     happened, and only the key lets the gateway answer the retry with it).
//
// Other answers and transport errors are returned at once.
type retrying struct {
	next       HttpRequestDoer
	maxRetries int
	maxWait    time.Duration
	sleep      func(ctx context.Context, d time.Duration) error
	now        func() time.Time
}

func (r *retrying) Do(req *http.Request) (*http.Response, error) {
	var base time.Duration // the previous wait, without its jitter
	for attempt := 0; ; attempt++ {
		res, err := r.next.Do(req)
		if err != nil || attempt >= r.maxRetries || !retryable(req, res) {
			return res, err
		}
		base = r.nextWait(res.Header.Get("Retry-After"), base)
		wait := base + mrand.N(base/10+1)
		if wait > r.maxWait || (req.Body != nil && req.GetBody == nil) {
			return res, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10)) // lets the connection be reused
		res.Body.Close()
		if err := r.sleep(req.Context(), wait); err != nil {
			return nil, err
		}
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
}

func retryable(req *http.Request, res *http.Response) bool {
	keyed := req.Header.Get("Idempotency-Key") != ""
	switch res.StatusCode {
	case http.StatusTooManyRequests:
		return true
	case http.StatusServiceUnavailable:
		return req.Method == http.MethodGet || req.Method == http.MethodHead || (req.Method == http.MethodPost && keyed)
	case http.StatusConflict:
		return keyed && inProgress(res)
	}
	return false
}

// inProgress reports whether a 409 is idempotency_in_progress. It reads the
// start of the body and puts it back in front of the rest.
func inProgress(res *http.Response) bool {
	body := res.Body
	b, err := io.ReadAll(io.LimitReader(body, 64<<10))
	res.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), body), body}
	var p struct{ Code ProblemCode }
	return err == nil && json.Unmarshal(b, &p) == nil && p.Code == ProblemCodeIdempotencyInProgress
}

// nextWait is the wait before the next attempt, before jitter: what
// Retry-After asks (in seconds or as an HTTP date), at least 1 s and at
// least twice the previous wait.
func (r *retrying) nextWait(retryAfter string, prev time.Duration) time.Duration {
	w := time.Second
	if s, err := strconv.Atoi(retryAfter); err == nil {
		w = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(retryAfter); err == nil {
		w = t.Sub(r.now())
	}
	return max(w, time.Second, 2*prev)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// NewIdempotencyKey returns a new random key for one logical create: a
// version 4 UUID (122 random bits).
func NewIdempotencyKey() string { return uuid.NewString() }
