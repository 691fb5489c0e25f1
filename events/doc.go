// Package events tells integrators what changed, by signed webhooks: it
// detects changes of invoices and clients in the platform's database (a
// Source per mode), turns each into an event with an id that depends only on
// the change, queues one delivery per subscribed endpoint in Redis, and
// delivers them from every gateway instance, signed to the Standard Webhooks
// 1.0 specification, at least once, retried on a schedule of about three days.
// It also records every company's events, endpoints or not, in a feed per
// company and mode that the API's GET /events reads by cursor (feed.go).
//
// It knows nothing of HTTP requests made to the gateway, of keys or of the
// other adapters; it speaks invoicing's vocabulary at its edge. What it keeps
// in Redis (endpoints, the queue, the delivery log) shares one hash tag, so
// that each of its scripts runs on one node of a Redis Cluster. Within the
// package, endpoints (Webhooks), the queue, detection and delivery are
// types of their own, sharing that layout and one clock
// (docs/architecture.md, Events).
//
// The guarantee, and its limits:
//   - Every change of the kinds of Types that is committed while a company
//     has an endpoint becomes an event, and each event reaches each endpoint
//     subscribed to it at least once while the endpoint is enabled and the
//     event is younger than the retention (a disabled endpoint's events wait
//     that long, then are dropped). Events are read from the data's state:
//     changes of one resource that detection reads together make one event
//     of the latest state (coalescing), however long detection was stopped.
//   - Detection resumes from its watermark, whatever the outage: an issue or
//     a creation is reported when detection reaches its row, as long as it
//     is no more than Config.Recovery older than the point detection had
//     reached (recentFrom). It reads by commit, not by clock (horizon.go): a
//     change whose transaction commits after later ones is read at its
//     commit, however long it was open, where the database shows every open
//     transaction's start (a role with pg_monitor), and without that where
//     the transaction first wrote within Config.Settle of its start. The
//     sweep, which reads back Config.Sweep every Sweep/2, finds the others
//     (a writer that records another time than its transaction's start);
//     one committed more than Sweep/2 after the time it records may be
//     missed.
//   - Without faults, exactly once, however many instances run: detection is
//     led by one instance per mode (a lease) and its progress is a
//     compare-and-set of a watermark done in the same script that queues the
//     events; deliveries are leased to one instance at a time. An event found
//     again (the sweep, a later change of its row that still says "paid") is
//     not queued again while its message is kept, nor while its id is
//     remembered (Config.Remember, 90 days: markers.go); found again later
//     than that, it is sent again, under its id.
//   - With faults, duplicates, never different ids: an instance that dies
//     mid-delivery leaves a lease that expires and the delivery is made
//     again; if the pipeline's state in Redis is lost, detection starts again
//     Config.Recovery back (after an import, from the export's resume point:
//     resume.go) and re-detects what it had found, under the same ids (an id
//     is a hash of the mode, company, type, resource and change), pending
//     deliveries included. What the loss takes that detection cannot
//     find again: events older than Config.Recovery still waiting for an
//     endpoint, and those superseded by a later change of their resource (the
//     event of its latest state is sent).
package events
