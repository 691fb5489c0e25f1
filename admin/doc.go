// Package admin is the platform team's administration of the gateway: the
// admin API (keys, limits and what a limit would have refused, usage,
// traffic, the audit log, webhook endpoints and their delivery logs, the
// platform's companies by name), its console and
// the runtime profiles, on the admin listener behind the admin token, and
// the same operations for the command line (Service.CreateKey, ListKeys,
// CompanyLimits, CompanyAudit, ...), with the views both show.
//
// It speaks HTTP through web, the HTTP layer of both listeners: its routes
// (Service.Routes, which the binary mounts on the admin listener beside
// the instance's health and metrics) are in the same middleware chain, and
// the one layer that writes every answer and problem. Its handlers return
// an answer or an error (a *web.Error, or an adapter's error, which carries
// its kind); none writes. authz, tenants, usage, audit and the live database
// are reached through the small interfaces declared here, for what
// administration needs: create, roll, revoke and list keys; read and set
// limits; read usage; record and read the audit log; find companies by name
// or NIF.
//
// A new administered resource (e.g. a company's webhook endpoints) is one
// file here: its interface, its operations and views, and its handlers,
// registered in Service.Routes (behind the token and X-Actor like every
// admin route); its store is given in Config, its errors carry their kind
// and code (invoicing.Define), and each change is made by apply (change.go:
// actor and text checks, the state before, the change, its audit record
// with its actor).
package admin
