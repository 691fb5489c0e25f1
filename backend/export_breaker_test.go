package backend

import "context"

// StatementTimeout is the statement_timeout of one of s's PostgreSQL
// sessions, as the server reports it.
func StatementTimeout(ctx context.Context, s *Store) (string, error) {
	var v string
	err := s.db.reader(settled, "").one(ctx, "SHOW statement_timeout", nil, &v)
	return v, err
}

// SleepWithoutDeadline runs pg_sleep(seconds) with ctx as is, without the
// Store's client-side deadline: only the server's statement_timeout can stop
// it early.
func SleepWithoutDeadline(ctx context.Context, s *Store, seconds float64) error {
	_, err := s.db.primary.exec(ctx, "SELECT pg_sleep($1)", seconds)
	if err != nil {
		return s.fail(ctx, "sleep", err)
	}
	return nil
}
