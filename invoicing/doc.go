// Package invoicing is the gateway's shared vocabulary: the key mode, the
// company id, the public API's resources, filters and pages, and the kinds
// of error (Error, Define) by which every adapter says what went wrong.
// Every other package of the gateway may import it; it imports none of them.
// Adapters (backend for the platform's database, authz and tenants for
// Redis) translate to and from these types at their edge, so that one
// definition of "LIVE", of a company id, of a client and of "not found"
// serves them all.
//
// It also holds the checks that more than one layer makes, so that none
// imports another for them: the text of a change (text.go, secret.go), the
// admin token's strength (token.go), the forms of the origin and host
// settings (hosts.go), and SettingError, a component's refused setting
// (setting.go), which the configuration names in its own words.
package invoicing
