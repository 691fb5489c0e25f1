// Package gateway is the HTTP front of the public invoicing API: routing,
// the middleware chain (request id, recovery, access log, authentication,
// rate limiting), the five API handlers, the internal admin API, and the one
// table that maps every error to an HTTP status and a problem+json body. It is
// the only package that knows HTTP; authz, tenants and backend are reached
// through the small interfaces declared here, where they are used.
package gateway
