package main

import (
	"log/slog"
	"net"
	"net/netip"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/gateway"
)

// checkAdmin checks the admin listener's settings: a token, when set, must
// be strong (admin.CheckToken: the admin API can create keys of every
// company), and the host names must be names.
func (c Config) checkAdmin(bad func(field, msg string)) {
	if c.AdminToken != "" {
		if err := admin.CheckToken(c.AdminToken); err != nil {
			bad("AdminToken", "is too weak: it "+err.Error()+"; make one with: "+admin.MakeToken)
		}
	}
	if _, err := gateway.ParseAdminHosts(c.AdminHosts); err != nil {
		bad("AdminHosts", err.Error())
	}
}

// warnAdminAddr warns when the admin listener is bound to an address other
// than loopback (all interfaces, a private or a public address): then only
// the network keeps others from it, and it must be a private one.
func warnAdminAddr(logger *slog.Logger, addr net.Addr) {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil || ap.Addr().IsLoopback() {
		return
	}
	logger.Warn("the admin listener is not on loopback: only the network keeps others from it; keep it private (a firewall, a NetworkPolicy)",
		"admin", addr.String(), "setting", settingName("AdminAddr"))
}
