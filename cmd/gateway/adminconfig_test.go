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

// A weak admin token stops start-up with the setting's name, why, and how to
// make a strong one; the token itself is never repeated. A strong one, or
// none (the admin API closed), starts.
func TestAdminTokenMustBeStrong(t *testing.T) {
	base := map[string]string{"GATEWAY_LIVE_DATABASE_URL": "postgres://db/live", "GATEWAY_TEST_DATABASE_URL": "postgres://db/test"}
	for tok, want := range map[string]string{
		"a":                                     "fewer than 32",
		"admin-secret-token":                    "fewer than 32",
		"correct horse battery staple 12345678": "visible ASCII",
		"admin-secret-token-admin-secret-token": "chosen rather than random",
		testAdminToken:                          "",
		"":                                      "",
	} {
		env := map[string]string{"GATEWAY_ADMIN_TOKEN": tok}
		for k, v := range base {
			env[k] = v
		}
		_, err := loadConfig("", envOf(env))
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", tok, err)
		case want == "":
		case err == nil:
			t.Errorf("%q: accepted", tok)
		default:
			msg := err.Error()
			for _, w := range []string{"GATEWAY_ADMIN_TOKEN (adminToken)", "too weak", want, "make one with: openssl rand -hex 24"} {
				if !strings.Contains(msg, w) {
					t.Errorf("%q: %q lacks %q", tok, msg, w)
				}
			}
			if len(tok) > 1 && strings.Contains(msg, tok) {
				t.Errorf("the error repeats the token: %q", msg)
			}
		}
	}
	env := map[string]string{"GATEWAY_ADMIN_HOSTS": "gw-admin.internal:8081"}
	for k, v := range base {
		env[k] = v
	}
	if _, err := loadConfig("", envOf(env)); err == nil || !strings.Contains(err.Error(), "GATEWAY_ADMIN_HOSTS") {
		t.Errorf("a host with a port: %v", err)
	}
}

// The admin listener on anything but loopback starts with a warning that
// names the address and the setting.
func TestWarnAdminAddrNotLoopback(t *testing.T) {
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
