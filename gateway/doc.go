// Package gateway is the HTTP front of the public invoicing API: routing,
// the middleware chain (request id, recovery, access log, authentication,
// rate limiting), the API handlers, the developer portal, and the one
// table that maps every error to an HTTP status and a problem+json body.
// authz, tenants, usage, idempotency and backend are reached through the
// small interfaces declared here, where they are used, and only for what a
// request needs (verify a key, admit it, count it).
//
// It also builds the admin listener's frame (AdminHandler, mount.go): the
// same chain and problem writer, this instance's health, readiness and
// metrics, and a narrow kit through which the admin package mounts the
// admin API, so that one layer (writeAnswers) writes every answer and
// problem of both listeners.
package gateway
