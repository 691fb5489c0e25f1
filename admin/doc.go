// Package admin is the platform team's administration of the gateway: the
// admin API (keys, limits and what a limit would have refused, usage,
// traffic, the audit log, webhook endpoints and their delivery logs, the
// platform's companies by name), its console and
// the runtime profiles, on the admin listener behind the admin token, and
// the same operations for the command line, with the views both show.
//
// It is one room per resource, each a small type that holds only the
// interface it needs, declared beside it:
//
//   - Keys (keys.go, revoke.go): create, roll, revoke and list API keys,
//     through a Keyring (authz.Keyring).
//   - Limits (limits.go, whatif.go, shape.go, whatifhttp.go): each
//     company's limits, and the evidence for changing them (what-if, the
//     traffic's shape, the headroom), through a Limiter (tenants.Limiter)
//     and a ShapeStore (shape.Store).
//   - Webhooks (webhooks.go, webhookshttp.go): webhook endpoints, through
//     Endpoints; Deliveries (deliveries.go, webhookstats.go,
//     webhooksend.go): their delivery logs and deliveries sent again,
//     through a DeliveryLog. events.Service is both (Events).
//   - Audit (audit.go): a company's audit log, through an AuditLog
//     (audit.Log); Usage (usage.go, traffic.go): request counts per day and
//     minute and the overview, through a UsageCounter (usage.Counter);
//     Companies (companies.go): the platform's companies by name or NIF,
//     through a Directory (backend.Store).
//
// The rooms share a base: the clock, the log, the check that a company
// exists (Platform), and the audit record each change leaves. Service
// holds the rooms (svc.Keys.CreateKey, svc.Limits.WhatIf, ...: the
// command line calls them as the handlers do) and guards the listener:
// the admin token, its throttle, and Routes, the one list of every room's
// routes. A room per resource, so that what an operation may use is its
// room's few fields, not every resource's dependencies.
//
// It speaks HTTP through web, the HTTP layer of both listeners: its routes
// (Service.Routes, which the binary mounts on the admin listener beside
// the instance's health and metrics) are in the same middleware chain, and
// the one layer that writes every answer and problem. Its handlers return
// an answer or an error (a *web.Error, or an adapter's error, which carries
// its kind); none writes.
//
// A new administered resource is one room here: its type, its interface,
// its operations and views, and its handlers, registered in
// Service.Routes (behind the token and X-Actor like every admin route);
// its store is given in Config, its errors carry their kind and code
// (invoicing.Define), and each change is made by apply (change.go: actor
// and text checks, the state before, the change, its audit record with
// its actor).
package admin
