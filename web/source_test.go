package web

import (
	"net/netip"
	"testing"
)

// The client address rule: the peer, or, behind trusted proxies, the
// right-most X-Forwarded-For entry that is not a trusted proxy.
func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48"), netip.MustParsePrefix("192.0.2.1/32")}
	for _, c := range []struct {
		name   string
		peer   string
		xff    []string
		want   string // "" means unknown
		noProx bool   // judge without trusted proxies
	}{
		{"untrusted peer", "203.0.113.7:5100", nil, "203.0.113.7", false},
		{"untrusted peer's header is ignored", "203.0.113.7:5100", []string{"198.51.100.1"}, "203.0.113.7", false},
		{"no proxies configured: header ignored", "10.1.1.1:80", []string{"198.51.100.1"}, "10.1.1.1", true},
		{"trusted peer, one entry", "10.1.1.1:80", []string{"198.51.100.1"}, "198.51.100.1", false},
		{"right-most untrusted entry", "10.1.1.1:80", []string{"6.6.6.6, 198.51.100.1"}, "198.51.100.1", false},
		{"client-sent entries to the left are skipped", "10.1.1.1:80", []string{"6.6.6.6,7.7.7.7", "198.51.100.1"}, "198.51.100.1", false},
		{"trusted hops are skipped", "10.1.1.1:80", []string{"198.51.100.1, 10.2.2.2", "192.0.2.1"}, "198.51.100.1", false},
		{"every hop trusted: the left-most", "10.1.1.1:80", []string{"10.3.3.3, 10.2.2.2"}, "10.3.3.3", false},
		{"trusted peer without header", "10.1.1.1:80", nil, "10.1.1.1", false},
		{"entry with a port", "10.1.1.1:80", []string{"198.51.100.1:4711"}, "198.51.100.1", false},
		{"IPv6 entry with a port", "10.1.1.1:80", []string{"[2001:db8::5]:443"}, "2001:db8::5", false},
		{"IPv6 trusted peer", "[2001:db8:ffff::9]:443", []string{"2001:db8::5"}, "2001:db8::5", false},
		{"IPv4-mapped peer", "[::ffff:203.0.113.7]:5100", nil, "203.0.113.7", false},
		{"IPv4-mapped trusted peer", "[::ffff:10.1.1.1]:5100", []string{"198.51.100.1"}, "198.51.100.1", false},
		{"garbage entry: unknown", "10.1.1.1:80", []string{"unknown"}, "", false},
		{"empty entry: unknown", "10.1.1.1:80", []string{"198.51.100.1,"}, "", false},
		{"garbage left of the client is never read", "10.1.1.1:80", []string{"garbage, 198.51.100.1"}, "198.51.100.1", false},
		{"garbage peer", "pipe", nil, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := trusted
			if c.noProx {
				tr = nil
			}
			got, ok := clientAddr(c.peer, c.xff, tr)
			if c.want == "" {
				if ok {
					t.Fatalf("clientAddr = %v, want unknown", got)
				}
				return
			}
			if !ok || got != netip.MustParseAddr(c.want) {
				t.Fatalf("clientAddr = %v, %v; want %s", got, ok, c.want)
			}
		})
	}
}
