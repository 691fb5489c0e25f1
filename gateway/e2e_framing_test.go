package gateway_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// exchange writes raw to a new connection to addr and reads n answers, or
// fewer if the server closes the connection first. It then asks whether
// the connection is still open with one more request of its own (a
// health check, its request id known): closed says whether the server
// closed the connection instead of answering it; any answer before it is
// one more answer to raw.
func exchange(t *testing.T, addr, raw string, n int) (answers []*http.Response, bodies []string, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Only a bound for a server that never answers: each read ends with an
	// answer or the connection's end long before it.
	_ = c.SetDeadline(time.Now().Add(testenv.Patience))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	read := func() (*http.Response, string, bool) {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("no answer nor the connection's end: %v", err)
			}
			return nil, "", false
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, string(b), true
	}
	for len(answers) < n {
		res, body, ok := read()
		if !ok {
			return answers, bodies, true
		}
		answers, bodies = append(answers, res), append(bodies, body)
	}
	const probeID = "framing-probe-1"
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: "+probeID+"\r\n\r\n"); err != nil {
		return answers, bodies, true
	}
	for {
		res, body, ok := read()
		if !ok {
			return answers, bodies, true
		}
		if res.Header.Get("X-Request-Id") == probeID {
			return answers, bodies, false
		}
		answers, bodies = append(answers, res), append(bodies, body)
	}
}

// A request with both Content-Length and Transfer-Encoding (or HTTP/1.0
// with Transfer-Encoding) is refused with 400 invalid_framing, on both
// listeners, and its connection closed: what a proxy trusting the length
// would have taken for a second request is never read as one, and nothing
// is created. Requests around it, chunked ones and bodies that hold such a
// head included, are served as before on a connection kept open.
func TestAmbiguousLengthRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	pub := serveLimited(t, in.srv.Handler(), web.HTTPConfig{})
	adm := serveLimited(t, in.adminH, web.HTTPConfig{})
	auth := "Authorization: Bearer " + k.Key + "\r\nX-Company-Id: " + coA + "\r\n"
	smuggled := "GET /api/v1/v1/clients?search=Smuggled HTTP/1.1\r\nHost: gw\r\n" + auth + "\r\n"
	body := `{"name":"Smuggled Lda"}`
	chunk := func(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }
	create := "POST /api/v1/v1/clients HTTP/1.1\r\nHost: gw\r\n" + auth + "Content-Type: application/json\r\n"
	get := "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	ambiguous := "GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" // as a body

	for _, c := range []struct {
		name, addr, raw string
		want            []int // statuses, in order
		closed          bool
	}{
		{"both, public", pub, create + "Content-Length: " + strconv.Itoa(len(chunk(body))) + "\r\nTransfer-Encoding: chunked\r\n\r\n" +
			chunk(body) + "0\r\n\r\n" + smuggled, []int{400}, true},
		{"both, admin", adm, "POST /admin/v1/keys HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + get, []int{400}, true},
		{"both, encoding folded", pub, get + create + "Transfer-Encoding:\r\n chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + get, []int{200, 400}, true},
		{"HTTP/1.0 with an encoding", pub, "POST /api/v1/v1/clients HTTP/1.0\r\nConnection: keep-alive\r\n" + auth +
			"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body + get, []int{400}, true},
		{"chunked, and such a head as a body, kept open", pub, create + "Transfer-Encoding: chunked\r\n\r\n" + chunk(`{"name":`) + chunk(`"Kept Lda"}`) +
			"0\r\nX-Trailer: 1\r\n\r\n" + "POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + strconv.Itoa(len(ambiguous)) + "\r\n\r\n" + ambiguous +
			"POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(ambiguous) + "0\r\n\r\n" + get, []int{201, 405, 405, 200}, false},
	} {
		answers, bodies, closed := exchange(t, c.addr, c.raw, len(c.want))
		var got []int
		for _, a := range answers {
			got = append(got, a.StatusCode)
		}
		if !slicesEqual(got, c.want) || closed != c.closed {
			t.Errorf("%s: answered %v (closed: %v), want %v (closed: %v)\n%v", c.name, got, closed, c.want, c.closed, bodies)
			continue
		}
		for i, a := range answers {
			if a.StatusCode != 400 {
				continue
			}
			var p struct{ Code, Detail string }
			if err := json.Unmarshal([]byte(bodies[i]), &p); err != nil || p.Code != "invalid_framing" || !strings.Contains(p.Detail, "RFC 9112") ||
				!a.Close || a.Header.Get("Content-Type") != "application/problem+json" || a.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("%s: %v %s", c.name, a.Header, bodies[i])
			}
		}
	}
	r := do(t, "http://"+pub, req{Path: "/api/v1/v1/clients?search=Smuggled", Key: k.Key, Company: coA})
	if r.Status != 200 || strings.Contains(string(r.Body), "Smuggled Lda") {
		t.Errorf("a refused request created its client: %d %s", r.Status, r.Body)
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
