package events

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/invoicing"
)

// addrCases are addresses, and whether the strict policy (no allowed
// networks) and the demo's (loopback allowed) let a delivery reach each.
var addrCases = []struct {
	ip           string
	strict, demo bool // allowed by each
}{
	{"93.184.216.34", true, true},
	{"2606:2800:220:1:248:1893:25c8:1946", true, true},
	{"127.0.0.1", false, true},
	{"::1", false, true},
	{"::ffff:127.0.0.1", false, true}, // IPv4-mapped: judged as the IPv4 address
	{"10.1.2.3", false, false},
	{"172.16.0.1", false, false},
	{"192.168.1.1", false, false},
	{"169.254.169.254", false, false}, // cloud metadata
	{"fd00:ec2::254", false, false},   // AWS metadata over IPv6
	{"fe80::1", false, false},
	{"0.0.0.0", false, false},
	{"::", false, false},
	{"100.64.0.1", false, false},
	{"224.0.0.1", false, false},
	{"255.255.255.255", false, false},
	{"64:ff9b::a00:1", false, false}, // NAT64 of 10.0.0.1
	{"::ffff:10.0.0.1", false, false},
	// Outside public space, though net/netip calls them global unicast:
	// each once reached a loopback or internal host, or is nobody's.
	{"::127.0.0.1", false, false},     // IPv4-compatible 127.0.0.1
	{"2002:7f00:1::", false, false},   // 6to4 of 127.0.0.1
	{"2002:a00:1::1", false, false},   // 6to4 of 10.0.0.1
	{"::ffff:0:7f00:1", false, false}, // IPv4-translated 127.0.0.1
	{"2001::1", false, false},         // Teredo
	{"2001:0:4136:e378::1", false, false},
	{"fec0::1", false, false}, // site-local
	{"100::1", false, false},  // discard-only
	{"2001:db8::1", false, false},
	{"3fff::1", false, false},
	{"2001:2::1", false, false}, // benchmarking
	{"2620:4f:8000::1", false, false},
	{"fc00::1", false, false},
	{"ff02::1", false, false},
	{"4000::1", false, false}, // unassigned, outside 2000::/3
	{"192.0.2.1", false, false},
	{"192.0.0.9", false, false},
	{"192.88.99.1", false, false},
	{"198.51.100.7", false, false},
	{"203.0.113.9", false, false},
	{"198.18.0.1", false, false},
	{"192.31.196.1", false, false},
	{"192.52.193.1", false, false},
	{"192.175.48.1", false, false},
	{"239.255.255.250", false, false},
	// Public addresses, next to the blocks above.
	{"1.1.1.1", true, true},
	{"8.8.8.8", true, true},
	{"11.0.0.1", true, true},
	{"100.63.255.255", true, true},
	{"100.128.0.1", true, true},
	{"172.32.0.1", true, true},
	{"192.0.1.1", true, true},
	{"192.88.98.1", true, true},
	{"198.17.255.1", true, true},
	{"223.255.255.1", true, true},
	{"2001:4860:4860::8888", true, true},
	{"2001:200::1", true, true}, // just past 2001::/23
	{"2a00:1450:4001::1", true, true},
	{"2c0f:f248::1", true, true}, // AFRINIC
	{"2003::1", true, true},
	{"3ffe::1", true, true},
	{"::ffff:8.8.8.8", true, true},
}

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	strict := destinations{}
	demo := destinations{allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	for _, c := range addrCases {
		ip := netip.MustParseAddr(c.ip)
		if err := strict.checkAddr(ip); (err == nil) != c.strict {
			t.Errorf("strict %s: %v, want allowed=%v", c.ip, err, c.strict)
		}
		if err := demo.checkAddr(ip); (err == nil) != c.demo {
			t.Errorf("demo %s: %v, want allowed=%v", c.ip, err, c.demo)
		}
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	hosts := map[string][]netip.Addr{
		"hooks.example.com": {netip.MustParseAddr("93.184.216.34")},
		"internal.example":  {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.8")},
		"localhost":         {netip.MustParseAddr("127.0.0.1")},
		"rebinding.example": {netip.MustParseAddr("169.254.169.254")},
	}
	d := destinations{lookup: func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, ok := hosts[host]; ok {
			return a, nil
		}
		return nil, errors.New("no such host")
	}}
	for _, c := range []struct {
		url, want string // want: "" accepted, else a fragment of the error
	}{
		{"https://hooks.example.com/webhooks", ""},
		{"  https://hooks.example.com:8443/w?x=1  ", ""},
		{"https://93.184.216.34/w", ""},
		{"http://hooks.example.com/w", "https"},
		{"ftp://hooks.example.com/w", "https"},
		{"hooks.example.com/w", "absolute"},
		{"https:///w", "absolute"},
		{"https://user:pw@hooks.example.com/w", "user or password"},
		{"https://hooks.example.com/w#frag", "fragment"},
		{"https://internal.example/w", "private"},
		{"https://localhost/w", "loopback"},
		{"https://127.0.0.1/w", "loopback"},
		{"https://[::1]/w", "loopback"},
		{"https://rebinding.example/w", "link-local"},
		{"https://nowhere.example/w", "nowhere.example does not resolve (no such host)"},
		{"https://10.1.2.3/w", "must point to a public address: 10.1.2.3 is a private address"},
		{"https://internal.example/w", "internal.example resolves to 10.0.0.8, a private address"},
		// The addresses that once passed, as an endpoint's URL has them.
		{"https://[::127.0.0.1]/w", "outside public IPv6 space"},
		{"https://[2002:7f00:1::]/w", "6to4"},
		{"https://[::ffff:0:7f00:1]/w", "outside public IPv6 space"},
		{"https://[2001::1]/w", "Teredo"},
		{"https://[fec0::1]/w", "outside public IPv6 space"},
		{"https://[100::1]/w", "outside public IPv6 space"},
		{"https://[2001:db8::1]/w", "documentation"},
		{"https://192.0.2.1/w", "documentation"},
		{"https://192.88.99.1/w", "6to4 relay"},
		{"https://[::ffff:127.0.0.1]/w", "loopback"},
		{"https://[2001:4860:4860::8888]/w", ""},
		{"https://hooks.example.com:99999/w", "port"},
		{"https://" + strings.Repeat("a", 2100) + ".com/", "characters"},
		{"", "characters"},
	} {
		got, err := d.checkURL(context.Background(), c.url)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: refused: %v", c.url, err)
		case c.want == "" && got != strings.TrimSpace(c.url):
			t.Errorf("%q: became %q", c.url, got)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrInvalidWebhook)):
			t.Errorf("%q: %v, want an invalid-endpoint error about %q", c.url, err, c.want)
		case c.want != "" && !errors.As(err, new(*invoicing.FieldError)):
			t.Errorf("%q: %v does not name the url field", c.url, err)
		}
	}
	// The demo's settings: plain http to loopback.
	demo := destinations{allowHTTP: true, allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	if _, err := demo.checkURL(context.Background(), "http://127.0.0.1:8082/hook"); err != nil {
		t.Errorf("demo: %v", err)
	}
	// An endpoint an import restores: the same rules, but a host that does
	// not resolve now is kept (every delivery checks its address).
	for url, want := range map[string]string{"https://nowhere.example/w": "", "http://hooks.example.com/w": "https",
		"https://localhost/w": "loopback", "https://internal.example/w": "private"} {
		err := d.checkRestoredURL(context.Background(), url)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("restored %q: %v, want %q", url, err, want)
		}
	}
}

// The dialer checks the address it connects to, at every delivery: a host
// that resolved to a public address when its endpoint was created, and to
// loopback now (DNS rebinding), is refused without a request sent, and the
// delivery log says why.
func TestDeliveryRefusedToLoopback(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	cfg.AllowedNetworks = nil // loopback not allowed
	cfg.Lookup = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil // what DNS said then
	}
	s := e.service(cfg)
	u := strings.Replace(e.recv.url(), "127.0.0.1", "localhost", 1) // loopback now
	ep, _, err := s.CreateWebhook(context.Background(), NewWebhook{CompanyID: e.company, Mode: invoicing.Test, URL: u})
	if err != nil {
		t.Fatal(err)
	}
	e.run(s)
	ev, err := s.TestWebhook(context.Background(), ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a := firstAttempt(t, s, ep.ID, ev.ID); a.Status != 0 || !strings.Contains(a.Error, "refused to connect") || !strings.Contains(a.Error, "loopback") {
		t.Errorf("attempt %+v, want a refusal to connect to loopback", a)
	}
	if n := len(e.recv.deliveries()); n != 0 {
		t.Errorf("the receiver got %d requests", n)
	}
}
