// Package gateway is the public invoicing API: its routes (the API's
// operations, the events feed, the developer portal, health and
// readiness), authentication (key, company, source network, scope), the
// rate limit, the in-flight cap, the operations' input (filters, cursors,
// the create-client body, Idempotency-Key) and the resources' fast
// encoders. It stands on web, the
// HTTP layer (chain, router, answer writer, problem table), and defines its
// own error codes there (errors.go). authz, tenants, usage, idempotency and
// backend are reached through the small interfaces declared here, where
// they are used, and only for what a request needs (verify a key, admit it,
// count it).
//
// It also builds the admin listener's frame (AdminHandler, mount.go): the
// same chain and problem writer, this instance's health, readiness and
// metrics, and a narrow kit through which the admin package mounts the
// admin API.
package gateway
