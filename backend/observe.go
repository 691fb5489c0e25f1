package backend

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

const tracerName = "github.com/invoicing-ao/gateway/backend"

// tracedDB makes a client span of each statement, under a recording parent
// only: work nobody traces pays one context lookup. It wraps each driver
// (primary and replica alike), below the choice of connection, so a span is
// the statement as the connection that ran it saw it. Statements are
// parameterized, so their text holds no value a caller sent (no NIF, no
// name searched for) and goes into db.query.text as it is.
type tracedDB struct {
	dbConn
	tracer trace.Tracer
	system attribute.KeyValue
	// breaker reports the breaker's state when the statement starts.
	breaker func() string
}

func traceDB(s *core, db dbConn, tp trace.TracerProvider) *tracedDB {
	t := &tracedDB{dbConn: db, system: attribute.String("db.system", dbSystem(s.d.engine))}
	if tp == nil {
		t.tracer = otel.Tracer(tracerName)
	} else {
		t.tracer = tp.Tracer(tracerName)
	}
	if s.breaker != nil {
		t.breaker = s.breaker.String
	}
	return t
}

// dbSystem is the OpenTelemetry name of an engine.
func dbSystem(engine string) string {
	if engine == "postgres" {
		return "postgresql"
	}
	return engine
}

func (t *tracedDB) start(ctx context.Context, sql string) (context.Context, trace.Span) {
	op, target := summarize(sql)
	name := op
	if target != "" {
		name += " " + target
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient))
	attrs := []attribute.KeyValue{t.system,
		attribute.String("db.operation.name", op),
		attribute.String("db.query.text", sql)}
	if target != "" {
		attrs = append(attrs, attribute.String("db.collection.name", target))
	}
	if t.breaker != nil {
		attrs = append(attrs, attribute.String("db.breaker.state", t.breaker()))
	}
	span.SetAttributes(attrs...)
	return ctx, span
}

func endWith(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "query failed")
	}
	span.End()
}

func (t *tracedDB) query(ctx context.Context, sql string, args ...any) (rowIter, error) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return t.dbConn.query(ctx, sql, args...)
	}
	ctx, span := t.start(ctx, sql)
	rows, err := t.dbConn.query(ctx, sql, args...)
	if err != nil {
		endWith(span, err)
		return nil, err
	}
	return &tracedRows{rowIter: rows, span: span}, nil
}

func (t *tracedDB) exec(ctx context.Context, sql string, args ...any) (int64, error) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return t.dbConn.exec(ctx, sql, args...)
	}
	ctx, span := t.start(ctx, sql)
	n, err := t.dbConn.exec(ctx, sql, args...)
	if err == nil {
		span.SetAttributes(attribute.Int64("db.response.affected_rows", n))
	}
	endWith(span, err)
	return n, err
}

// tracedRows counts the rows read and ends the statement's span on Close
// (callers may Close twice).
type tracedRows struct {
	rowIter
	span trace.Span
	n    int64
	once sync.Once
}

func (r *tracedRows) Next() bool {
	if r.rowIter.Next() {
		r.n++
		return true
	}
	return false
}

func (r *tracedRows) Close() {
	r.rowIter.Close()
	r.once.Do(func() {
		r.span.SetAttributes(attribute.Int64("db.response.returned_rows", r.n))
		endWith(r.span, r.rowIter.Err())
	})
}

// summarize returns a statement's operation (its first word) and the first
// table it reads from or writes to, for a low-cardinality span name.
func summarize(sql string) (op, target string) {
	sql = strings.TrimSpace(sql)
	end := strings.IndexAny(sql, " \n\t(")
	if end < 0 {
		return strings.ToUpper(sql), ""
	}
	op = strings.ToUpper(sql[:end])
	fields := strings.Fields(sql)
	if op == "WITH" {
		op = mainStatement(fields)
	}
	for i := 0; i+1 < len(fields); i++ {
		if w := strings.ToUpper(fields[i]); w == "FROM" || w == "INTO" || w == "UPDATE" {
			name := fields[i+1]
			if j := strings.IndexAny(name, "();,"); j >= 0 {
				name = name[:j]
			}
			if name != "" {
				return op, name
			}
		}
	}
	return op, ""
}

// mainStatement is the operation a WITH statement's common table
// expressions introduce (the first SELECT, INSERT, UPDATE or DELETE outside
// their parentheses), so that a read is named a SELECT however it is built.
func mainStatement(fields []string) string {
	depth := 0
	for _, f := range fields[1:] {
		if depth == 0 {
			switch w := strings.ToUpper(strings.TrimLeft(f, "(")); w {
			case "SELECT", "INSERT", "UPDATE", "DELETE":
				if !strings.HasPrefix(f, "(") {
					return w
				}
			}
		}
		depth += strings.Count(f, "(") - strings.Count(f, ")")
	}
	return "WITH"
}

// PoolStats describe a Store's connection pool.
type PoolStats struct {
	MaxConns   int // the pool's bound
	TotalConns int // open connections
	IdleConns  int
	InUseConns int
	// Acquires counts connections handed out (PostgreSQL; zero for SQLite).
	Acquires int64
	// Waits counts acquisitions that had to wait for a connection, and
	// WaitTime is the total time they waited.
	Waits    int64
	WaitTime time.Duration
}

// PoolStats returns the state of the connection pool (primary and replica
// pools added up when there is a replica); cheap enough for every metrics
// scrape.
func (s *Store) PoolStats() PoolStats {
	a := poolStats(s.db.primary)
	if s.db.replica == nil {
		return a
	}
	b := poolStats(s.db.replica)
	return PoolStats{
		MaxConns: a.MaxConns + b.MaxConns, TotalConns: a.TotalConns + b.TotalConns,
		IdleConns: a.IdleConns + b.IdleConns, InUseConns: a.InUseConns + b.InUseConns,
		Acquires: a.Acquires + b.Acquires, Waits: a.Waits + b.Waits, WaitTime: a.WaitTime + b.WaitTime,
	}
}

func poolStats(db dbConn) PoolStats {
	switch db := db.(type) {
	case *tracedDB:
		return poolStats(db.dbConn)
	case *pgDB:
		st := db.pool.Stat()
		return PoolStats{
			MaxConns: int(st.MaxConns()), TotalConns: int(st.TotalConns()), IdleConns: int(st.IdleConns()),
			InUseConns: int(st.AcquiredConns()), Acquires: st.AcquireCount(),
			Waits: st.EmptyAcquireCount(), WaitTime: st.EmptyAcquireWaitTime(),
		}
	case *sqliteDB:
		st := db.db.Stats()
		return PoolStats{
			MaxConns: st.MaxOpenConnections, TotalConns: st.OpenConnections, IdleConns: st.Idle,
			InUseConns: st.InUse, Waits: st.WaitCount, WaitTime: st.WaitDuration,
		}
	}
	return PoolStats{}
}
