package testenv

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// FaultProxy is a TCP proxy between a client under test and a real server
// (PostgreSQL, Redis), that the test can make fail: Pause holds every byte
// (the server seems hung), HoldReplies holds only the server's bytes (the
// server acts on what it is sent, but its answers are lost for as long),
// Cut closes every connection and resets new ones (the server seems down),
// Resume restores normal forwarding.
type FaultProxy struct {
	t        testing.TB
	ln       net.Listener
	upstream string
	accepted atomic.Int64

	mu      sync.Mutex
	mode    proxyMode
	changed chan struct{} // closed and replaced on every mode change
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

type proxyMode int

const (
	proxyOpen proxyMode = iota
	proxyPaused
	proxyHoldReplies
	proxyCut
	proxyClosed
)

// NewFaultProxy listens on a free loopback port and forwards to upstream
// (host:port). It is closed when the test ends.
func NewFaultProxy(t testing.TB, upstream string) *FaultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &FaultProxy{t: t, ln: ln, upstream: upstream, changed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// PostgresProxy is a FaultProxy to the tests' PostgreSQL server
// (PostgresAdminURL's host); Via points a database URL at it.
func PostgresProxy(t testing.TB) *FaultProxy {
	t.Helper()
	u, err := url.Parse(PostgresAdminURL())
	if err != nil {
		t.Fatalf("parse %s: %v", PostgresAdminURL(), err)
	}
	return NewFaultProxy(t, u.Host)
}

// Via returns rawURL (postgres://, redis://) with its host:port replaced by
// the proxy's.
func (p *FaultProxy) Via(rawURL string) string {
	p.t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		p.t.Fatalf("parse %s: %v", rawURL, err)
	}
	u.Host = p.Addr()
	return u.String()
}

// Addr is the proxy's host:port.
func (p *FaultProxy) Addr() string { return p.ln.Addr().String() }

// Accepted counts the connections accepted so far, refused ones included: a
// client that touched the server while it should not have shows here.
func (p *FaultProxy) Accepted() int64 { return p.accepted.Load() }

// HoldReplies lets requests reach the server and holds its answers until
// Resume or Cut.
func (p *FaultProxy) HoldReplies() { p.setMode(proxyHoldReplies) }

// Pause stops forwarding: connections stay open, bytes sent either way are
// held until Resume, new connections are accepted and held too.
func (p *FaultProxy) Pause() { p.setMode(proxyPaused) }

// Cut closes every connection and resets new ones until Resume.
func (p *FaultProxy) Cut() {
	p.setMode(proxyCut)
	p.closeConns()
}

// Resume forwards again; bytes held by Pause flow on.
func (p *FaultProxy) Resume() { p.setMode(proxyOpen) }

// Close stops the proxy and closes every connection.
func (p *FaultProxy) Close() {
	p.setMode(proxyClosed)
	_ = p.ln.Close()
	p.closeConns()
	p.wg.Wait()
}

func (p *FaultProxy) setMode(m proxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == proxyClosed {
		return
	}
	p.mode = m
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *FaultProxy) closeConns() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// flowing waits while the proxy holds bytes of this direction (reply: from
// the server) and reports whether they may pass.
func (p *FaultProxy) flowing(reply bool) bool {
	for {
		p.mu.Lock()
		m, ch := p.mode, p.changed
		p.mu.Unlock()
		switch {
		case m == proxyOpen, m == proxyHoldReplies && !reply:
			return true
		case m == proxyPaused, m == proxyHoldReplies:
			<-ch
		default:
			return false
		}
	}
}

// track registers c unless the proxy is cut or closed.
func (p *FaultProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == proxyCut || p.mode == proxyClosed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *FaultProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *FaultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		if !p.track(c) {
			reset(c)
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// reset closes c with a TCP RST, as a port nobody listens on would.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

func (p *FaultProxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	if !p.flowing(false) {
		return
	}
	server, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	if !p.track(server) {
		_ = server.Close()
		return
	}
	defer p.untrack(server)
	// Each pipe closes both connections when its side ends, which ends the
	// other pipe.
	p.wg.Add(1)
	go func() { defer p.wg.Done(); p.pipe(server, client, false) }()
	p.pipe(client, server, true)
}

// pipe copies src to dst (reply: from the server), holding each chunk while
// that direction is held.
func (p *FaultProxy) pipe(dst, src net.Conn, reply bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.flowing(reply) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF, reset, or closed by Cut
		}
	}
}
