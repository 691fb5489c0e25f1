package history

import "github.com/invoicing-ao/gateway/internal/sqldb"

// Migrations is the history's schema, for sqldb's Check and Apply.
//
// NULLs are avoided (columns default to 0 or empty), so that both engines
// scan alike. A delivery's body is its event's (events.body, by seq),
// except for a test delivery or an event queued again after it was found
// again, which keep their own (body not empty). Attempts are numbered by
// logged, which a requeue does not reset (attempts is the count since the
// delivery was last queued).
func Migrations() sqldb.Track {
	return sqldb.Track{Name: "events_history", Migrations: []sqldb.Migration{
		{Version: 1, Name: "feeds, marks, deliveries, attempts, watermarks", Postgres: pgSchema1, SQLite: liteSchema1},
	}}
}

const pgSchema1 = `
CREATE TABLE feed_heads (
  company_id uuid NOT NULL, mode text NOT NULL,
  last_seq bigint NOT NULL DEFAULT 0, recorded bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (company_id, mode));
CREATE TABLE feed_cuts (
  company_id uuid NOT NULL, mode text NOT NULL,
  cut_seq bigint NOT NULL, dropped bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (company_id, mode));
CREATE TABLE events (
  company_id uuid NOT NULL, mode text NOT NULL, seq bigint NOT NULL,
  event_id text NOT NULL, type text NOT NULL, resource_id text NOT NULL, body bytea NOT NULL,
  PRIMARY KEY (company_id, mode, seq)) PARTITION BY RANGE (seq);
CREATE INDEX events_type ON events (company_id, mode, type, seq);
CREATE TABLE event_marks (
  company_id uuid NOT NULL, mode text NOT NULL, event_id text NOT NULL,
  marked_ms bigint NOT NULL, seq bigint NOT NULL,
  PRIMARY KEY (company_id, mode, event_id, marked_ms)) PARTITION BY RANGE (marked_ms);
CREATE TABLE deliveries (
  company_id uuid NOT NULL, endpoint_id text NOT NULL, queued_ms bigint NOT NULL, event_id text NOT NULL,
  mode text NOT NULL, type text NOT NULL, resource_id text NOT NULL, seq bigint NOT NULL DEFAULT 0,
  state text NOT NULL, attempts integer NOT NULL DEFAULT 0, logged integer NOT NULL DEFAULT 0,
  next_ms bigint NOT NULL DEFAULT 0, done_ms bigint NOT NULL DEFAULT 0,
  cause text NOT NULL DEFAULT '', body bytea NOT NULL DEFAULT '',
  PRIMARY KEY (company_id, endpoint_id, queued_ms, event_id)) PARTITION BY RANGE (queued_ms);
CREATE INDEX deliveries_event ON deliveries (company_id, endpoint_id, event_id);
CREATE INDEX deliveries_pending ON deliveries (queued_ms, company_id, endpoint_id, event_id) WHERE state = 'pending';
CREATE TABLE delivery_attempts (
  company_id uuid NOT NULL, endpoint_id text NOT NULL, queued_ms bigint NOT NULL, event_id text NOT NULL, n integer NOT NULL,
  at_ms bigint NOT NULL, status integer NOT NULL, latency_ms double precision NOT NULL,
  error text NOT NULL, response text NOT NULL,
  PRIMARY KEY (company_id, endpoint_id, queued_ms, event_id, n)) PARTITION BY RANGE (queued_ms);
CREATE TABLE watermarks (
  mode text NOT NULL, stream text NOT NULL, mark text NOT NULL,
  PRIMARY KEY (mode, stream));
`

// liteSchema1 is pgSchema1 without partitions, with an index on each
// table's time for the retention's deletes.
const liteSchema1 = `
CREATE TABLE feed_heads (
  company_id text NOT NULL, mode text NOT NULL,
  last_seq bigint NOT NULL DEFAULT 0, recorded bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (company_id, mode));
CREATE TABLE feed_cuts (
  company_id text NOT NULL, mode text NOT NULL,
  cut_seq bigint NOT NULL, dropped bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (company_id, mode));
CREATE TABLE events (
  company_id text NOT NULL, mode text NOT NULL, seq bigint NOT NULL,
  event_id text NOT NULL, type text NOT NULL, resource_id text NOT NULL, body blob NOT NULL,
  PRIMARY KEY (company_id, mode, seq));
CREATE INDEX events_type ON events (company_id, mode, type, seq);
CREATE INDEX events_seq ON events (seq);
CREATE TABLE event_marks (
  company_id text NOT NULL, mode text NOT NULL, event_id text NOT NULL,
  marked_ms bigint NOT NULL, seq bigint NOT NULL,
  PRIMARY KEY (company_id, mode, event_id, marked_ms));
CREATE INDEX event_marks_ms ON event_marks (marked_ms);
CREATE TABLE deliveries (
  company_id text NOT NULL, endpoint_id text NOT NULL, queued_ms bigint NOT NULL, event_id text NOT NULL,
  mode text NOT NULL, type text NOT NULL, resource_id text NOT NULL, seq bigint NOT NULL DEFAULT 0,
  state text NOT NULL, attempts integer NOT NULL DEFAULT 0, logged integer NOT NULL DEFAULT 0,
  next_ms bigint NOT NULL DEFAULT 0, done_ms bigint NOT NULL DEFAULT 0,
  cause text NOT NULL DEFAULT '', body blob NOT NULL DEFAULT x'',
  PRIMARY KEY (company_id, endpoint_id, queued_ms, event_id));
CREATE INDEX deliveries_event ON deliveries (company_id, endpoint_id, event_id);
CREATE INDEX deliveries_pending ON deliveries (queued_ms, company_id, endpoint_id, event_id) WHERE state = 'pending';
CREATE INDEX deliveries_ms ON deliveries (queued_ms);
CREATE TABLE delivery_attempts (
  company_id text NOT NULL, endpoint_id text NOT NULL, queued_ms bigint NOT NULL, event_id text NOT NULL, n integer NOT NULL,
  at_ms bigint NOT NULL, status integer NOT NULL, latency_ms real NOT NULL,
  error text NOT NULL, response text NOT NULL,
  PRIMARY KEY (company_id, endpoint_id, queued_ms, event_id, n));
CREATE INDEX delivery_attempts_ms ON delivery_attempts (queued_ms);
CREATE TABLE watermarks (
  mode text NOT NULL, stream text NOT NULL, mark text NOT NULL,
  PRIMARY KEY (mode, stream));
`

// The partitioned tables (PostgreSQL), their spans, and the unit of their
// column (seq counts milliseconds × 1000).
var (
	eventsRanges     = sqldb.Ranges{Table: "events", PerMs: 1000}
	marksRanges      = sqldb.Ranges{Table: "event_marks", Span: 7 * 24 * 3600e9}
	deliveriesRanges = sqldb.Ranges{Table: "deliveries"}
	attemptsRanges   = sqldb.Ranges{Table: "delivery_attempts"}
)
