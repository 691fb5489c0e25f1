package authz

import (
	"slices"
	"testing"
)

// The trustedProxies setting: CIDRs and addresses, as a key's networks are
// read; anything else is refused.
func TestParseNetworks(t *testing.T) {
	t.Parallel()
	got, err := ParseNetworks("10.0.0.0/8, 2001:db8:ffff::/48,192.0.2.1")
	var names []string
	for _, p := range got {
		names = append(names, p.String())
	}
	if err != nil || !slices.Equal(names, []string{"10.0.0.0/8", "2001:db8:ffff::/48", "192.0.2.1/32"}) {
		t.Errorf("ParseNetworks = %v, %v", got, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.local", "10.0.0.0/8;10.1.0.0/16"} {
		if _, err := ParseNetworks(bad); err == nil {
			t.Errorf("ParseNetworks(%q) accepted", bad)
		}
	}
	if p, err := ParseNetworks(" "); err != nil || len(p) != 0 {
		t.Errorf("empty setting = %v, %v", p, err)
	}
}
