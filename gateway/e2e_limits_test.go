package gateway_test

// Limits against abuse, on the server the binary builds (web.NewHTTPServer)
// in front of the real handler: body, header, query and search sizes, and
// slow clients. (A flood of invalid keys: e2e_invalidkeys_test.go.)

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// serveLimited serves h the way the binary does, with cfg's limits, on a
// fresh port, and returns its address.
func serveLimited(t *testing.T, h http.Handler, cfg web.HTTPConfig) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := web.NewHTTPServer(h, cfg)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

func TestRequestSizeLimits(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	base := "http://" + serveLimited(t, in.srv.Handler(), web.HTTPConfig{})
	get := func(path string, hdr map[string]string) resp {
		return do(t, base, req{Path: path, Key: k.Key, Company: coA, Header: hdr})
	}

	// Bodies: 64 KiB is read, one byte more is 413, announced or not.
	pad := func(n int) string {
		body := `{"name":"Padded Lda"}`
		return body + strings.Repeat(" ", n-len(body))
	}
	if r := do(t, base, req{Method: "POST", Path: "/api/v1/v1/clients", Key: k.Key, Company: coA, Body: pad(64 << 10)}); r.Status != 201 {
		t.Errorf("64 KiB body: %d %s", r.Status, r.Body)
	}
	expectProblem(t, do(t, base, req{Method: "POST", Path: "/api/v1/v1/clients", Key: k.Key, Company: coA, Body: pad(64<<10 + 1)}), 413, "body_too_large")
	chunked := postChunked(t, base+"/api/v1/v1/clients", k.Key, pad(200<<10))
	expectProblem(t, chunked, 413, "body_too_large")

	// Heads (request line and headers): up to 16 KiB served, over it a 431
	// in the API's error format; past 64 KiB net/http stops reading and
	// answers 431 itself, in plain text.
	if r := get("/api/v1/v1/clients", map[string]string{"X-Filler": strings.Repeat("a", 12<<10)}); r.Status != 200 {
		t.Errorf("12 KiB of headers: %d", r.Status)
	}
	for _, hdr := range []map[string]string{
		{"X-Filler": strings.Repeat("a", 32<<10)}, // one big header
		manyHeaders(300, 80),                      // many small ones
		{"X-Filler": strings.Repeat("a", 16<<10)}, // just over
	} {
		expectProblem(t, get("/api/v1/v1/clients", hdr), 431, "headers_too_large")
	}
	expectProblem(t, get("/api/v1/v1/clients?search="+strings.Repeat("a", 21<<10), nil), 431, "headers_too_large")
	if r := rawGet(t, base+"/api/v1/v1/clients", map[string]string{"X-Filler": strings.Repeat("a", 70<<10)}); r != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("70 KiB of headers: %d, want net/http's 431", r)
	}

	// Query: 2048 bytes are parsed (here: an unknown parameter), 2049 are not.
	fieldOf := func(r resp) any { return r.json(t)["errors"].([]any)[0].(map[string]any)["field"] }
	r := get("/api/v1/v1/clients?x="+strings.Repeat("a", 2046), nil)
	if expectProblem(t, r, 400, "invalid_parameter"); fieldOf(r) != "x" {
		t.Errorf("2048-byte query: %s", r.Body)
	}
	r = get("/api/v1/v1/clients?x="+strings.Repeat("a", 2047), nil)
	if expectProblem(t, r, 400, "invalid_parameter"); fieldOf(r) != "query" {
		t.Errorf("2049-byte query: %s", r.Body)
	}

	// Search: 100 characters (not bytes), then 400.
	for term, ok := range map[string]bool{strings.Repeat("a", 100): true, strings.Repeat("ç", 100): true,
		strings.Repeat("a", 101): false, strings.Repeat("ç", 101): false} {
		r := get("/api/v1/v1/clients?search="+urlQuery(term), nil)
		if ok && r.Status != 200 {
			t.Errorf("search of %d characters: %d", len([]rune(term)), r.Status)
		}
		if !ok {
			if expectProblem(t, r, 400, "invalid_parameter"); fieldOf(r) != "search" {
				t.Errorf("search of %d characters: %s", len([]rune(term)), r.Body)
			}
		}
	}
}

func manyHeaders(n, size int) map[string]string {
	m := map[string]string{}
	for i := 0; i < n; i++ {
		m[fmt.Sprintf("X-H%d", i)] = strings.Repeat("b", size)
	}
	return m
}

// rawGet returns the status of a GET, whatever the body's format.
func rawGet(t *testing.T, url string, hdr map[string]string) int {
	t.Helper()
	r, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode
}

// postChunked sends a body without Content-Length.
func postChunked(t *testing.T, url, key, body string) resp {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.Copy(pw, strings.NewReader(body))
		pw.Close()
	}()
	r, _ := http.NewRequest(http.MethodPost, url, pr)
	r.Header.Set("Authorization", "Bearer "+key)
	r.Header.Set("X-Company-Id", coA)
	r.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if len(res.TransferEncoding) != 0 && res.ContentLength >= 0 {
		t.Log("answer framing:", res.TransferEncoding)
	}
	return resp{Status: res.StatusCode, Header: res.Header, Body: b}
}

// A client that sends its request head slowly is cut at ReadHeaderTimeout,
// whether it stalls or trickles one byte at a time (slowloris); a normal
// client of the same server is served.
func TestSlowClientsAreCut(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	const timeout = 300 * time.Millisecond
	addr := serveLimited(t, in.srv.Handler(), web.HTTPConfig{ReadHeaderTimeout: timeout})

	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// cut asserts the server closes c: a read ends in EOF or a reset, long
	// before the test's own 10 s deadline.
	cut := func(name string, c net.Conn) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		start := time.Now()
		_, err := io.ReadAll(c)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: the server kept the connection open", name)
			return
		}
		t.Logf("%s: closed by the server %v after the last read started (%v)", name, time.Since(start).Round(time.Millisecond), err)
	}

	stalled := dial()
	if _, err := io.WriteString(stalled, "GET /healthz HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	cut("stalled head", stalled)

	trickle := dial()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		head := "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("s", 200) + "\r\n\r\n"
		// One byte per tick: the pace is the slowloris itself.
		tick := time.NewTicker(timeout / 6)
		defer tick.Stop()
		for i := 0; i < len(head); i++ {
			if _, err := trickle.Write([]byte{head[i]}); err != nil {
				return // the server hung up, as it should
			}
			<-tick.C
		}
	}()
	cut("trickled head", trickle)
	wg.Wait()

	fast := dial()
	if _, err := io.WriteString(fast, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(fast), nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("a normal client of the same server: %v %v", res, err)
	}
	res.Body.Close()
}
