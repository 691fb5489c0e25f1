package authz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

func newClock() *testenv.Clock { return testenv.NewClock(time.Now().Truncate(time.Millisecond)) }

// probe is a go-redis hook that counts commands by name and can make every
// command fail, as an outage would.
type probe struct {
	mu     sync.Mutex
	counts map[string]int
	pipes  atomic.Int64 // pipelines of key lookups (HGETALL) sent
	tagged atomic.Int64 // commands sent with a context that carries probeTag
	down   atomic.Bool
	failIf func(cmd redis.Cmder) bool // under mu; fails the commands it picks
}

var errDown = errors.New("injected outage")

// probeTag marks a context whose commands the probe also counts apart
// (tagged): those a call made, without the keyring's background work.
type probeTag struct{}

func tagged(ctx context.Context) context.Context { return context.WithValue(ctx, probeTag{}, true) }

// attachProbe hooks a probe into rdb; the outage ends with the test, so a
// failing test does not take the next one down with it.
func attachProbe(t testing.TB, rdb *redis.Client) *probe {
	p := &probe{counts: map[string]int{}}
	rdb.AddHook(p)
	t.Cleanup(func() { p.down.Store(false); p.failOn(nil) })
	return p
}

// failOn makes the commands pick chooses fail, as a fault of Redis between
// two commands would; nil ends it.
func (p *probe) failOn(pick func(cmd redis.Cmder) bool) {
	p.mu.Lock()
	p.failIf = pick
	p.mu.Unlock()
}

func (p *probe) fails(cmd redis.Cmder) bool {
	if p.down.Load() {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failIf != nil && p.failIf(cmd)
}

func (p *probe) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (p *probe) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		p.count(cmd)
		if ctx.Value(probeTag{}) != nil {
			p.tagged.Add(1)
		}
		if p.fails(cmd) {
			cmd.SetErr(errDown)
			return errDown
		}
		return next(ctx, cmd)
	}
}

func (p *probe) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		lookups := false
		if ctx.Value(probeTag{}) != nil {
			p.tagged.Add(int64(len(cmds)))
		}
		for _, c := range cmds {
			p.count(c)
			lookups = lookups || strings.EqualFold(c.Name(), "hgetall")
		}
		if lookups {
			p.pipes.Add(1)
		}
		if p.down.Load() {
			for _, c := range cmds {
				c.SetErr(errDown)
			}
			return errDown
		}
		return next(ctx, cmds)
	}
}

func (p *probe) count(cmd redis.Cmder) {
	p.mu.Lock()
	p.counts[strings.ToLower(cmd.Name())]++
	p.mu.Unlock()
}

// n returns how many commands of these names ran; no name means all.
func (p *probe) n(names ...string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	total := 0
	for name, c := range p.counts {
		if len(names) == 0 {
			total += c
			continue
		}
		for _, want := range names {
			if name == want {
				total += c
			}
		}
	}
	return total
}

const (
	companyA = "0b7e3c6a-5f1d-4c1e-9a51-2d3f4e5a6b7c"
	companyB = "7d1f0e2a-9c3b-4d5e-8f60-718293a4b5c6"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newRing returns a Keyring on rdb under prefix, closed when the test ends.
func newRing(t testing.TB, rdb redis.UniversalClient, prefix string, c *testenv.Clock, edit func(*Config)) *Keyring {
	t.Helper()
	cfg := Config{Redis: rdb, Prefix: prefix, Logger: quiet, NoPubSub: true}
	if c != nil {
		cfg.Now = c.Now
	}
	if edit != nil {
		edit(&cfg)
	}
	k := New(cfg)
	t.Cleanup(func() { _ = k.Close() })
	return k
}

func mustCreate(t testing.TB, k *Keyring, company string, m invoicing.Mode, scopes string) (Key, string) {
	t.Helper()
	s, err := ParseScopes(scopes)
	if err != nil {
		t.Fatal(err)
	}
	key, secret, err := k.Create(context.Background(), NewKey{CompanyID: company, Mode: m, Scopes: s, Name: "test key"})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return key, secret
}

// wantErr is the condition of an Eventually that waits for err to be want.
func wantErr(err, want error) error {
	if errors.Is(err, want) {
		return nil
	}
	return fmt.Errorf("got %v, want %v", err, want)
}

// lastUsed is the condition of an Eventually that waits for the key's
// last-used time to be at.
func lastUsed(k *Keyring, id string, at time.Time) error {
	g, err := k.Get(context.Background(), id)
	switch {
	case err != nil:
		return err
	case g.LastUsedAt == nil:
		return errors.New("no last-used time")
	case !g.LastUsedAt.Equal(at):
		return fmt.Errorf("last used at %v, want %v", g.LastUsedAt, at)
	}
	return nil
}
