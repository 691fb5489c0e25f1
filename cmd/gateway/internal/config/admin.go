package config

import "github.com/invoicing-ao/gateway/invoicing"

// checkAdmin checks the admin listener's settings: a token, when set, must
// be strong (invoicing.CheckToken: the admin API can create keys of every
// company), and the host names must be names.
func (c Config) checkAdmin(bad func(field, msg string)) {
	if c.AdminToken != "" {
		if err := invoicing.CheckToken(c.AdminToken); err != nil {
			bad("AdminToken", "is too weak: it "+err.Error()+"; make one with: "+invoicing.MakeToken)
		}
	}
	if _, err := invoicing.ParseHosts(c.AdminHosts); err != nil {
		bad("AdminHosts", err.Error())
	}
}
