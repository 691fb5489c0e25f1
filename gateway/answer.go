package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/invoicing-ao/gateway/idempotency"
)

// answer is what a handler answers when it does not fail: writeAnswers
// writes it. The layers outside writeAnswers get it back with status and
// bytes as written.
type answer struct {
	status   int    // zero means 200
	body     any    // written as JSON (encode.go); nil means no body
	location string // the Location header, for a created resource
	// serve writes an answer of its own kind (portal files with validators,
	// profiles, metrics); body and location are then unused.
	serve http.Handler
	// raw, with contentType, is a body already encoded (a stored answer,
	// given again byte for byte); body is then unused.
	raw         []byte
	contentType string
	replayed    bool // the answer of an earlier attempt: Idempotent-Replayed: true
	// conditional answers 200 with an ETag of its body, or 304 without the
	// body when the request's If-None-Match has that tag.
	conditional bool

	bytes int // set by writeAnswers: body bytes written
}

// writeAnswers is the one place that writes: the answer of the handler it
// wraps, or its error as a problem. It returns the answer as written (status
// and bytes set) and, for a failure, the problem it wrote (an *Error whose
// Err is the cause), for the layers outside it to observe.
func writeAnswers(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (answer, error) {
		ans, err := next(w, r)
		if ans.raw != nil {
			return writeRaw(w, ans), err
		}
		if err != nil {
			p := problemFor(err)
			status, n := writeProblem(w, r, p)
			return answer{status: status, bytes: n}, p
		}
		if ans.serve != nil {
			cw := &countingWriter{ResponseWriter: w}
			ans.serve.ServeHTTP(cw, r)
			ans.status, ans.bytes = cw.status, cw.bytes
			if ans.status == 0 {
				ans.status = http.StatusOK
			}
			return ans, nil
		}
		if ans.status == 0 {
			ans.status = http.StatusOK
		}
		setAnswerHeaders(w.Header(), ans)
		if ans.body == nil {
			w.WriteHeader(ans.status)
			return ans, nil
		}
		var cond *http.Request
		if ans.conditional && ans.status == http.StatusOK {
			cond = r
		}
		ans.status, ans.bytes = writeJSON(w, stateFrom(r.Context()), cond, ans.status, ans.body)
		return ans, nil
	}
}

// writeRaw writes an encoded answer; the error returned with it, if any, is
// the one it encodes, for the layers outside.
func writeRaw(w http.ResponseWriter, ans answer) answer {
	h := w.Header()
	h.Set("Content-Type", ans.contentType)
	h.Set("Content-Length", strconv.Itoa(len(ans.raw)))
	setAnswerHeaders(h, ans)
	w.WriteHeader(ans.status)
	ans.bytes, _ = w.Write(ans.raw)
	return ans
}

// setAnswerHeaders sets the headers an answer carries of its own.
func setAnswerHeaders(h http.Header, ans answer) {
	if ans.location != "" {
		h.Set("Location", ans.location)
	}
	if ans.replayed {
		h.Set("Idempotent-Replayed", "true")
	}
}

// render encodes what writeAnswers would write for (ans, err), for storing:
// a JSON body, or err's problem (with requestID in it).
func render(ans answer, err error, requestID string) idempotency.Answer {
	if err != nil {
		p := problemFor(err)
		status, body := problemJSON(p, requestID)
		return idempotency.Answer{Status: status, ContentType: problemContentType, Body: body}
	}
	b, buf, merr := marshalJSON(ans.body)
	if merr != nil {
		status, body := problemJSON(problemFor(merr), requestID)
		return idempotency.Answer{Status: status, ContentType: problemContentType, Body: body}
	}
	a := idempotency.Answer{Status: ans.status, ContentType: "application/json", Body: append([]byte(nil), b...), Location: ans.location}
	releaseBuf(buf)
	return a
}

// stored is the answer that writes a, replayed or not.
func stored(a idempotency.Answer, replayed bool) answer {
	return answer{status: a.Status, raw: a.Body, contentType: a.ContentType, location: a.Location, replayed: replayed}
}

const problemContentType = "application/problem+json"

// writeJSON writes v as the response body with an exact Content-Length and
// returns the status and the bytes written. With a conditional request, it
// tags the body (ETag) and answers 304 without it when the request's
// If-None-Match has the tag. The two header values share one string, backed
// by the request's record st: one allocation where there were five.
func writeJSON(w http.ResponseWriter, st *reqState, conditional *http.Request, status int, v any) (int, int) {
	b, buf, err := marshalJSON(v) // encode.go
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
	if conditional != nil {
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
// code calls for, and returns the status and the bytes written.
func writeProblem(w http.ResponseWriter, r *http.Request, p *Error) (status, n int) {
	status, b := problemJSON(p, stateFrom(r.Context()).ID)
	h := w.Header()
	h.Set("Content-Type", problemContentType)
	h.Set("Cache-Control", "no-store")
	switch {
	case status == http.StatusUnauthorized && p.Code != "unauthorized_admin":
		h.Set("WWW-Authenticate", `Bearer realm="invoicing-api"`)
	case status == http.StatusMethodNotAllowed:
		h.Set("Allow", p.Allow)
	}
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(ceilSeconds(p.RetryAfter)))
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
		panic(fmt.Sprintf("gateway: encoding a problem: %v", err))
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
