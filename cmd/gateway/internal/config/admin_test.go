package config

import (
	"strings"
	"testing"
)

// strongToken is a strong admin token (`openssl rand -hex 24`).
const strongToken = "9f4c2a7e1b8d3c6f0a5e9b2d7c4f1a8e6b3d0c9f2a7e5b1d"

// A weak admin token stops start-up with the setting's name, why, and how to
// make a strong one; the token itself is never repeated. A strong one, or
// none (the admin API closed), starts.
func TestAdminTokenMustBeStrong(t *testing.T) {
	base := map[string]string{"GATEWAY_LIVE_DATABASE_URL": "postgres://db/live", "GATEWAY_TEST_DATABASE_URL": "postgres://db/test", "GATEWAY_HISTORY_DATABASE_URL": "postgres://db/gateway"}
	for tok, want := range map[string]string{
		"a":                                     "fewer than 32",
		"admin-secret-token":                    "fewer than 32",
		"correct horse battery staple 12345678": "visible ASCII",
		"admin-secret-token-admin-secret-token": "chosen rather than random",
		strongToken:                             "",
		"":                                      "",
	} {
		env := map[string]string{"GATEWAY_ADMIN_TOKEN": tok}
		for k, v := range base {
			env[k] = v
		}
		_, err := Load("", envOf(env), NeedAll)
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
	if _, err := Load("", envOf(env), NeedAll); err == nil || !strings.Contains(err.Error(), "GATEWAY_ADMIN_HOSTS") {
		t.Errorf("a host with a port: %v", err)
	}
}
