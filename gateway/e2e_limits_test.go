package gateway_test

// Limits against abuse, on the server the binary builds (web.NewHTTPServer)
// in front of the real handler: body, header, query and search sizes, slow
// clients, and a flood of invalid keys counted in Redis commands.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/authz"
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

// commandCounter counts the Redis commands that requests of the test cause:
// those sent with a context that carries causedByTest (which the requests'
// contexts pass on to the commands they send), not the instance's own
// background work (last-used writes, renewals), which a busy machine may
// delay into any window the test counts.
type commandCounter struct {
	mu sync.Mutex
	n  map[string]int
}

// causedByTest marks a request's context, and so the Redis commands it sends.
type causedByTest struct{}

// countedServer serves the instance's public API with every request's
// context marked for commandCounter.
func countedServer(t *testing.T, in *instance) *httptest.Server {
	srv := httptest.NewUnstartedServer(in.pub.Config.Handler)
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, causedByTest{}, true)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if ctx.Value(causedByTest{}) != nil {
			c.add(cmd)
		}
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if ctx.Value(causedByTest{}) != nil {
			for _, cmd := range cmds {
				c.add(cmd)
			}
		}
		return next(ctx, cmds)
	}
}

func (c *commandCounter) add(cmd redis.Cmder) {
	c.mu.Lock()
	c.n[strings.ToLower(cmd.Name())]++
	c.mu.Unlock()
}

// total counts commands of these names, or all.
func (c *commandCounter) total(names ...string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := 0
	for name, n := range c.n {
		if len(names) == 0 || contains(names, name) {
			sum += n
		}
	}
	return sum
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomBody is n random base62 characters.
func randomBody(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = base62[rng.IntN(len(base62))]
	}
	return string(b)
}

// withChecksum appends the key format's checksum to s: the CRC-32 (IEEE)
// of s in six base62 digits, computed here as any client, or attacker, can.
func withChecksum(s string) string {
	c := crc32.ChecksumIEEE([]byte(s))
	var out [6]byte
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = base62[c%62]
		c /= 62
	}
	return s + string(out[:])
}

// randomSecret is a well-formed LIVE secret, checksum right, never issued.
func randomSecret(rng *rand.Rand) string { return withChecksum("igw_live_" + randomBody(rng, 43)) }

// randomLegacySecret is a well-formed LIVE secret of the first form (no
// checksum), never issued.
func randomLegacySecret(rng *rand.Rand) string { return "igw_live_" + randomBody(rng, 43) }

// A flood of invalid keys: malformed ones and typos (a wrong checksum) never
// reach Redis, a well-formed unknown key costs one lookup per NegativeTTL
// however often it is sent, and unknown keys do not push a valid key out of
// the cache. Every one of them is a 401. Many distinct unknown keys are
// TestUnknownKeyFlood's.
func TestInvalidKeyFlood(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	counter := &commandCounter{n: map[string]int{}}
	rdb := redis.NewClient(w.rdb.Options())
	rdb.AddHook(counter)
	t.Cleanup(func() { rdb.Close() })
	in := w.start(withRedis(rdb)) // its clock stands still: no cache entry expires during the test
	pub := countedServer(t, in)
	good := in.key(t, coA, invoicing.Live, allScopes)
	q := req{Path: "/api/v1/v1/clients?pageSize=1", Key: good.Key, Company: coA}
	if r := do(t, pub.URL, q); r.Status != 200 {
		t.Fatalf("good key: %d", r.Status)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	flood := func(n int, secret func(i int) string) (cmds, lookups int) {
		t.Helper()
		before, beforeLookups := counter.total(), counter.total("hgetall")
		for i := 0; i < n; i++ {
			// Status only: the full answer checks of do() would make this
			// loop slow, and TestAuthStatuses checks these answers.
			hr, _ := http.NewRequest(http.MethodGet, pub.URL+"/api/v1/v1/clients", nil)
			hr.Header.Set("Authorization", "Bearer "+secret(i))
			hr.Header.Set("X-Company-Id", coA)
			res, err := http.DefaultClient.Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 401 {
				t.Fatalf("invalid key %d: %d", i, res.StatusCode)
			}
		}
		return counter.total() - before, counter.total("hgetall") - beforeLookups
	}

	malformed := []func() string{
		func() string {
			n := rng.IntN(authz.SecretLength)
			if n == authz.LegacySecretLength {
				n-- // that long, it is a secret of the first form
			}
			return randomSecret(rng)[:n]
		},
		func() string { return randomSecret(rng) + "x" },
		func() string { s := []byte(randomSecret(rng)); s[20] = '-'; return string(s) },
		func() string { return strings.Replace(randomSecret(rng), "igw_live_", "igw_prod_", 1) },
		func() string { return fmt.Sprintf("%x", rng.Uint64()) },
		// Typos: one character changed, or the mode edited.
		func() string {
			s := []byte(randomSecret(rng))
			s[30] = base62[(strings.IndexByte(base62, s[30])+1)%62]
			return string(s)
		},
		func() string { return strings.Replace(randomSecret(rng), "igw_live_", "igw_test_", 1) },
	}
	if n, _ := flood(1000, func(int) string { return malformed[rng.IntN(len(malformed))]() }); n != 0 {
		t.Errorf("1,000 malformed keys cost %d Redis commands, want 0", n)
	}

	few := make([]string, 10)
	for i := range few {
		few[i] = randomSecret(rng)
		if i%2 == 1 {
			few[i] = randomLegacySecret(rng)
		}
	}
	if _, n := flood(1000, func(i int) string { return few[i%len(few)] }); n != len(few) {
		t.Errorf("1,000 requests with %d unknown keys cost %d lookups, want %d", len(few), n, len(few))
	}

	before := counter.total("hgetall")
	if r := do(t, pub.URL, q); r.Status != 200 {
		t.Fatalf("good key after the flood: %d", r.Status)
	}
	if n := counter.total("hgetall") - before; n != 0 {
		t.Errorf("after the flood the valid key cost %d lookups: it was evicted", n)
	}
}
