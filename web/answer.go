package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Answer is what a route answers when it does not fail: writeAnswers
// writes it. The layers outside writeAnswers get it back with Status and
// the bytes written set.
type Answer struct {
	Status   int    // zero means 200
	Body     any    // written as JSON (Answers.Encoder, else encoding/json); nil means no body
	Location string // the Location header, for a created resource
	// Serve writes an answer of its own kind (files with validators,
	// profiles, metrics); Body and Location are then unused.
	Serve http.Handler
	// Raw, with ContentType, is a body already encoded (a stored answer,
	// given again byte for byte); Body is then unused.
	Raw         []byte
	ContentType string
	Replayed    bool // the answer of an earlier attempt: Idempotent-Replayed: true
	// Conditional answers 200 with an ETag of its body, or 304 without the
	// body when the request's If-None-Match has that tag.
	Conditional bool
	// ETag, with Conditional, is the tag sent and compared instead of the
	// body's hash (a quoted string): for answers that stand for one state
	// though their bodies differ, such as a feed's page and the empty
	// page read from its end. Empty means the body's hash.
	ETag string

	bytes int // set by writeAnswers: body bytes written
}

// Answers is how a listener writes its answers and problems.
type Answers struct {
	// APIPrefix is the path under which the listener serves the API's
	// resources: a problem that names the caller's client (a conflict's
	// existingClientId, invoicing.ClientConflict) says it is at
	// APIPrefix/clients/{id}. Empty names the id alone.
	APIPrefix string
	// Realm is the realm of the Bearer challenge (WWW-Authenticate) a 401
	// carries; empty means none (a caller that knows its token's scheme).
	Realm string
	// Encoder writes the bodies of the types it knows faster than
	// encoding/json, byte for byte the same; nil means encoding/json for
	// every body.
	Encoder Encoder
}

// Encoder appends the JSON of the values it knows, exactly as
// encoding/json writes them; nil for any other value, which encoding/json
// then writes.
type Encoder interface {
	AppendJSON(b []byte, v any) []byte
}

// writeAnswers is the one place that writes: the answer of the handler it
// wraps, or its error as a problem. It returns the answer as written
// (Status and bytes set) and, for a failure, the problem it wrote (an
// *Error whose Err is the cause), for the layers outside it to observe.
func (c *chain) writeAnswers(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (Answer, error) {
		ans, err := next(w, r)
		if ans.Raw != nil {
			return writeRaw(w, ans), err
		}
		if err != nil {
			p := c.Answers.Problem(err)
			status, n := writeProblem(w, r, p, c.Answers.Realm)
			return Answer{Status: status, bytes: n}, p
		}
		if ans.Serve != nil {
			cw := &countingWriter{ResponseWriter: w}
			ans.Serve.ServeHTTP(cw, r)
			ans.Status, ans.bytes = cw.status, cw.bytes
			if ans.Status == 0 {
				ans.Status = http.StatusOK
			}
			return ans, nil
		}
		if ans.Status == 0 {
			ans.Status = http.StatusOK
		}
		setAnswerHeaders(w.Header(), ans)
		if ans.Body == nil {
			w.WriteHeader(ans.Status)
			return ans, nil
		}
		var cond *http.Request
		if ans.Conditional && ans.Status == http.StatusOK {
			cond = r
		}
		ans.Status, ans.bytes = c.writeJSON(w, StateOf(r.Context()), cond, ans.ETag, ans.Status, ans.Body)
		return ans, nil
	}
}

// writeRaw writes an encoded answer; the error returned with it, if any, is
// the one it encodes, for the layers outside.
func writeRaw(w http.ResponseWriter, ans Answer) Answer {
	h := w.Header()
	h.Set("Content-Type", ans.ContentType)
	h.Set("Content-Length", strconv.Itoa(len(ans.Raw)))
	setAnswerHeaders(h, ans)
	w.WriteHeader(ans.Status)
	ans.bytes, _ = w.Write(ans.Raw)
	return ans
}

// setAnswerHeaders sets the headers an answer carries of its own.
func setAnswerHeaders(h http.Header, ans Answer) {
	if ans.Location != "" {
		h.Set("Location", ans.Location)
	}
	if ans.Replayed {
		h.Set("Idempotent-Replayed", "true")
	}
}

// Encode is what the listener would write for (ans, err), for storing
// (an Idempotency-Key's answer, given again byte for byte as Raw): the
// status, content type and body of a JSON answer, or of err's problem
// (with requestID in it).
func (a Answers) Encode(ans Answer, err error, requestID string) (status int, contentType string, body []byte) {
	if err != nil {
		status, body := problemJSON(a.Problem(err), requestID)
		return status, problemContentType, body
	}
	b, buf, merr := marshalJSON(ans.Body, a.Encoder)
	if merr != nil {
		status, body := problemJSON(a.Problem(merr), requestID)
		return status, problemContentType, body
	}
	body = append([]byte(nil), b...)
	releaseBuf(buf)
	return ans.Status, "application/json", body
}

const problemContentType = "application/problem+json"

// writeJSON writes v as the response body with an exact Content-Length and
// returns the status and the bytes written. With a conditional request, it
// tags the body (ETag) and answers 304 without it when the request's
// If-None-Match has the tag. The two header values share one string, backed
// by the request's record st: one allocation where there were five.
func (c *chain) writeJSON(w http.ResponseWriter, st *State, conditional *http.Request, etag string, status int, v any) (int, int) {
	b, buf, err := marshalJSON(v, c.Answers.Encoder)
	if err != nil {
		// Resources always encode; should one not, the caller still gets
		// the API's error format.
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusInternalServerError)
		n, _ := w.Write([]byte(`{"type":"` + problemTypeBase + `internal_error","title":"Internal server error","status":500,"detail":"An internal error occurred.","code":"internal_error"}` + "\n"))
		return http.StatusInternalServerError, n
	}
	defer releaseBuf(buf)
	h := w.Header()
	var vb [64]byte
	vals := vb[:0]
	switch {
	case conditional != nil && etag != "":
		vals = append(vals, etag...)
	case conditional != nil:
		sum := sha256.Sum256(b)
		vals = append(vals, '"')
		vals = hex.AppendEncode(vals, sum[:16])
		vals = append(vals, '"')
	}
	cut := len(vals)
	vals = strconv.AppendInt(vals, int64(len(b)), 10)
	both := string(vals)
	if conditional != nil {
		tag := both[:cut]
		st.setHeader(h, "Etag", hdrETag, tag) // ETag's canonical form
		if etagMatches(conditional.Header.Values("If-None-Match"), tag) {
			w.WriteHeader(http.StatusNotModified)
			return http.StatusNotModified, 0
		}
	}
	h["Content-Type"] = jsonContentType
	st.setHeader(h, "Content-Length", hdrContentLength, both[cut:])
	w.WriteHeader(status)
	n, _ := w.Write(b)
	return status, n
}

// jsonContentType is shared by every answer, as the values in middleware.go.
var jsonContentType = []string{"application/json"}

// writeProblem writes p as application/problem+json, with the headers its
// status calls for (realm: Answers.Realm), and returns the status and the
// bytes written.
func writeProblem(w http.ResponseWriter, r *http.Request, p *Error, realm string) (status, n int) {
	status, b := problemJSON(p, StateOf(r.Context()).id)
	h := w.Header()
	h.Set("Content-Type", problemContentType)
	h.Set("Cache-Control", "no-store")
	switch {
	case status == http.StatusUnauthorized && realm != "":
		h.Set("WWW-Authenticate", `Bearer realm="`+realm+`"`)
	case status == http.StatusMethodNotAllowed:
		h.Set("Allow", p.Allow)
	}
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(CeilSeconds(p.RetryAfter)))
	}
	w.WriteHeader(status)
	n, _ = w.Write(b)
	return status, n
}

// problemJSON is p's status and RFC 9457 body.
func problemJSON(p *Error, requestID string) (int, []byte) {
	pc := p.row()
	b, err := json.Marshal(problemBody{
		Type: problemTypeBase + p.Code, Title: pc.Title, Status: pc.Status,
		Detail: p.Detail, Code: p.Code, RequestID: requestID, Errors: p.Fields, Checks: p.Checks,
		ExistingClientID: p.ExistingClientID,
	})
	if err != nil { // only strings, ints and maps of strings: cannot happen
		panic(fmt.Sprintf("web: encoding a problem: %v", err))
	}
	return pc.Status, append(b, '\n')
}

// countingWriter remembers the status and counts the body bytes of an answer
// its handler writes itself.
type countingWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (c *countingWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	n, err := c.ResponseWriter.Write(b)
	c.bytes += n
	return n, err
}

func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// etagMatches is If-None-Match's weak comparison (RFC 9110 13.1.2): any
// listed tag, W/ or not, equal to tag, or "*".
func etagMatches(headers []string, tag string) bool {
	for _, h := range headers {
		for _, t := range strings.Split(h, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if t == tag || t == "*" {
				return true
			}
		}
	}
	return false
}

// The bodies of the Encoder's types are written into pooled buffers:
// encoding/json costs a list page of 20 invoices some 220 allocations and
// most of the request's CPU time (gateway/encode.go). Anything else
// (errors, admin answers) goes through encoding/json.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// marshalJSON appends v's JSON and a newline to a pooled buffer, by enc
// when it knows v; releaseBuf(p) returns the buffer to the pool once the
// bytes are written (p is nil when encoding/json made them).
func marshalJSON(v any, enc Encoder) (b []byte, p *[]byte, err error) {
	if enc != nil {
		p = bufPool.Get().(*[]byte)
		if b = enc.AppendJSON((*p)[:0], v); b != nil {
			b = append(b, '\n')
			*p = b
			return b, p, nil
		}
		bufPool.Put(p)
	}
	b, err = json.Marshal(v)
	return append(b, '\n'), nil, err
}

func releaseBuf(p *[]byte) {
	if p != nil && cap(*p) <= 1<<20 { // a huge answer is not worth keeping
		*p = (*p)[:0]
		bufPool.Put(p)
	}
}
