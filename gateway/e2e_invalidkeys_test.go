package gateway_test

// A flood of invalid keys, counted in the Redis commands the requests cause.

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/invoicing"
)

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
