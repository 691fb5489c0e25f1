// Package web is the HTTP layer both listeners stand on: the middleware
// chain (request id, telemetry, access log, recovery, security headers,
// framing, host, header and body limits, CORS), the router, the one writer
// of answers and the one table that maps every error to a status and an
// RFC 9457 problem, the strict readers of query strings and JSON bodies,
// and the connections' server (limits, framing).
//
// Routes return an Answer or an error and write nothing themselves
// (Router.Handle); writeAnswers writes either. A route tells the layers
// outside it who is calling through the request's record (State.Identify):
// a small value (Caller), all the access log, the span and the usage count
// need. An error is answered by its code (this package's own table,
// problem.go) or by the kind and code an adapter defined it with
// (invoicing.Define), so the layer knows no adapter and no API: the public
// API (package gateway) and the admin API (package admin) build their
// listeners on it (Listener), each with its routes and its Config, and the
// binary assembles them.
package web
