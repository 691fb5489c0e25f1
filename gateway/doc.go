// Package gateway is the public invoicing API: its routes (the API's
// operations, the events feed, the developer portal, health and
// readiness), authentication (key, company, source network, scope), the
// rate limit, the in-flight cap, the operations' input (filters, cursors,
// the create-client body, Idempotency-Key) and the resources' fast
// encoders. It stands on web, the HTTP layer (chain, router, answer
// writer, problem table), and defines its own error codes there
// (errors.go). authz, tenants, usage, idempotency, backend and the events
// feed are reached through the small interfaces declared here, where they
// are used, and only for what a request needs (verify a key, admit it,
// count it).
//
// Its health and readiness checks (Server.Health) are served on both
// listeners: the binary mounts them on the admin listener beside the
// admin API, which gateway never imports.
package gateway
