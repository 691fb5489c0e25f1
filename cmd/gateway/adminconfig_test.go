package main

import (
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// testAdminToken is a strong admin token (`openssl rand -hex 24`), for the
// tests that start gateways.
const testAdminToken = "9f4c2a7e1b8d3c6f0a5e9b2d7c4f1a8e6b3d0c9f2a7e5b1d"

// The admin listener on anything but loopback starts with a warning that
// names the address and the setting.
func TestWarnAdminAddrNotLoopback(t *testing.T) {
	t.Parallel()
	for addr, warned := range map[string]bool{"127.0.0.1:0": false, "[::1]:0": false, "0.0.0.0:0": true, "[::]:0": true} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("%s: %v", addr, err) // no IPv6 here
			continue
		}
		logs := &testenv.SyncBuffer{}
		warnAdminAddr(slog.New(slog.NewJSONHandler(logs, nil)), ln.Addr())
		ln.Close()
		got := logs.String()
		if warned != strings.Contains(got, `"level":"WARN"`) || warned && (!strings.Contains(got, ln.Addr().String()) || !strings.Contains(got, "GATEWAY_ADMIN_ADDR")) {
			t.Errorf("%s: %q", addr, got)
		}
	}
}
