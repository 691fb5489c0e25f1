package config

import (
	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/web"
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
	if _, err := web.ParseHosts(c.AdminHosts); err != nil {
		bad("AdminHosts", err.Error())
	}
}
