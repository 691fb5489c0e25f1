package events

import "github.com/invoicing-ao/gateway/invoicing"

// Redis layout, under Prefix (P); every key holds the hash tag {events}, so
// that the scripts, which touch an endpoint, its queue and the ready set
// together, run on one node of a Redis Cluster (the events' work then has
// one shard's throughput: tens of thousands of deliveries a second).
//
//	P{events}:ep:<id>            hash   an endpoint: "cfg" (JSON: URL, types, sealed secrets...),
//	                                    "enabled" (1/0), "failing" (ms since, or absent),
//	                                    "ok" (last success, ms), "err" (last error),
//	                                    "disabled" (ms), "why" (reason)
//	P{events}:eps:<mode>:<company> set  the company's endpoint ids in that mode
//	P{events}:cos:<mode>         set    the companies with endpoints in that mode
//	P{events}:delrec:<id>        string a deleted endpoint (its public JSON), kept
//	                                    Retention, so that deleting it again answers
//	                                    as the first deletion did (deletion.go)
//	P{events}:msg:<event id>     string an event (JSON), kept Retention; it, or
//	                                    the event's marker, makes a second detection
//	                                    of the same change a no-op
//	P{events}:seen:<gen>:<shard> set    markers: the ids of the events queued in a
//	                                    generation, as integers, kept Remember after
//	                                    it (markers.go)
//	P{events}:q:<endpoint>       zset   event ids waiting for delivery, by due time (ms)
//	P{events}:lease:<endpoint>   zset   event ids being delivered, by lease end (ms)
//	P{events}:ready              zset   endpoints with work, by when it is due (ms)
//	P{events}:d:<endpoint>:<evt> hash   a delivery: state, attempts, times, type, resource
//	P{events}:a:<endpoint>:<evt> list   its attempts (JSON), newest last, at most maxAttemptLog
//	P{events}:log:<endpoint>     zset   the endpoint's deliveries, by queueing time (ms)
//	P{events}:gone:<endpoint>    string a deleted endpoint's deletion time (ms), kept
//	                                    deletedKept: an import leaves it deleted (state.go)
//	P{events}:wm:<mode>:<stream> string a detector stream's watermark, or "rewind" (an
//	                                    import: read back the recovery window)
//	P{events}:resumed:<mode>     string an import's resume point and export time ("<µs>|<µs>"):
//	                                    what detection need not report again (resume.go)
//	P{events}:ahead:<mode>:<stream> string how far the leader's read of a stream has gone
//	                                    while a transaction open holds its watermark
//	                                    back (horizon.go): for the metrics' lag alone
//	P{events}:lead:<mode>        string the instance leading detection in that mode
//	P{events}:sealed             string when Reseal last ran (ms): its write, waited for,
//	                                    vouches for the secrets sealed before it (secrets.go)
//	P{events}:stats              string the metrics' reading of the state above (JSON), kept for
//	                                    every instance's scrapes for a few seconds (stats.go)
type layout struct{ p string }

func newLayout(prefix string) layout { return layout{p: prefix + "{events}:"} }

func (l layout) endpoint(id string) string { return l.p + "ep:" + id }
func (l layout) endpoints(m invoicing.Mode, company string) string {
	return l.p + "eps:" + string(m) + ":" + company
}
func (l layout) companies(m invoicing.Mode) string { return l.p + "cos:" + string(m) }
func (l layout) deletedRecord(id string) string    { return l.p + "delrec:" + id }
func (l layout) message(id string) string          { return l.p + "msg:" + id }
func (l layout) queue(ep string) string            { return l.p + "q:" + ep }
func (l layout) lease(ep string) string            { return l.p + "lease:" + ep }
func (l layout) ready() string                     { return l.p + "ready" }
func (l layout) delivery(ep, evt string) string    { return l.p + "d:" + ep + ":" + evt }
func (l layout) attempts(ep, evt string) string    { return l.p + "a:" + ep + ":" + evt }
func (l layout) log(ep string) string              { return l.p + "log:" + ep }
func (l layout) watermark(m invoicing.Mode, s string) string {
	return l.p + "wm:" + string(m) + ":" + s
}
func (l layout) resumed(m invoicing.Mode) string { return l.p + "resumed:" + string(m) }
func (l layout) ahead(m invoicing.Mode, s string) string {
	return l.p + "ahead:" + string(m) + ":" + s
}
func (l layout) deleted(ep string) string       { return l.p + "gone:" + ep }
func (l layout) leader(m invoicing.Mode) string { return l.p + "lead:" + string(m) }
func (l layout) stats() string                  { return l.p + "stats" }
func (l layout) sealed() string                 { return l.p + "sealed" }

// version counts the changes of endpoints (any mode): the detectors read
// their endpoints again when it moves.
func (l layout) version() string { return l.p + "ver" }
