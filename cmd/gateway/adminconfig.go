package main

import (
	"log/slog"
	"net"
	"net/netip"

	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
)

// warnAdminAddr warns when the admin listener is bound to an address other
// than loopback (all interfaces, a private or a public address): then only
// the network keeps others from it, and it must be a private one.
func warnAdminAddr(logger *slog.Logger, addr net.Addr) {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil || ap.Addr().IsLoopback() {
		return
	}
	logger.Warn("the admin listener is not on loopback: only the network keeps others from it; keep it private (a firewall, a NetworkPolicy)",
		"admin", addr.String(), "setting", config.SettingName("AdminAddr"))
}
