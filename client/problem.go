package client

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
)

// Error makes the document's Problem (RFC 9457, generated from the
// document) the error the API's methods return for every answer that is not
// the operation's success, so that callers branch on its stable Code:
//
//	var p *client.Problem
//	if errors.As(err, &p) && p.Code == client.ProblemCodeNifConflict { … }
//
// Title and Detail are for people; RequestId is what support asks for.
func (p *Problem) Error() string {
	code := string(p.Code)
	if code == "" {
		code = "(no code)"
	}
	return fmt.Sprintf("invoicing API: %d %s: %s (request id %s)", p.Status, code, p.Detail, p.RequestId)
}

// problemFrom reads an error answer. One that is not a problem document
// (a proxy's HTML page, say) becomes a Problem without a Code, with the
// answer's status, so that callers handle every error one way.
func problemFrom(res *http.Response, body []byte) *Problem {
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	var p Problem
	if mt == "application/problem+json" && json.Unmarshal(body, &p) == nil && p.Code != "" {
		if p.Status == 0 {
			p.Status = res.StatusCode
		}
		return &p
	}
	return &Problem{
		Status:    res.StatusCode,
		Title:     http.StatusText(res.StatusCode),
		Detail:    fmt.Sprintf("unexpected answer: status %d, Content-Type %q, %d bytes", res.StatusCode, res.Header.Get("Content-Type"), len(body)),
		RequestId: res.Header.Get("X-Request-Id"),
	}
}
