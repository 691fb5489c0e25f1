// Package events tells integrators what changed, by signed webhooks: it
// detects changes of invoices and clients in the platform's database (a
// Source per mode), turns each into an event with an id that depends only on
// the change, queues one delivery per subscribed endpoint in Redis, and
// delivers them from every gateway instance, signed to the Standard Webhooks
// 1.0 specification, at least once, retried on a schedule of about three days.
//
// It knows nothing of HTTP requests made to the gateway, of keys or of the
// other adapters; it speaks invoicing's vocabulary at its edge. What it keeps
// in Redis (endpoints, the queue, the delivery log) shares one hash tag, so
// that each of its scripts runs on one node of a Redis Cluster.
//
// The guarantee, and its limits:
//   - Every change of the kinds of Types that is committed while a company
//     has an endpoint becomes an event, and each event reaches each endpoint
//     subscribed to it at least once while the endpoint is enabled and the
//     event is younger than the retention.
//   - Without faults, exactly once, however many instances run: detection is
//     led by one instance per mode (a lease) and its progress is a
//     compare-and-set of a watermark done in the same script that queues the
//     events; deliveries are leased to one instance at a time.
//   - With faults, duplicates, never different ids: an instance that dies
//     mid-delivery leaves a lease that expires and the delivery is made
//     again; if the pipeline's state in Redis is lost, detection starts again
//     Config.Recovery back and re-detects what it had found, under the same
//     ids (an id is a hash of the mode, company, type, resource and change).
//   - A change committed more than Config.Settle after the time it records
//     (updated_at) is found by the sweep, which reads back Config.Sweep.
package events
