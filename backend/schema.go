package backend

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The project's copy of the platform's schema (the contract its tests load;
// the project never reads the platform's own files), its SQLite translation,
// and the indexes the gateway proposes to the platform's DBAs.
var (
	//go:embed schema/postgres.sql
	postgresSchema string
	//go:embed schema/sqlite.sql
	sqliteSchema string
	//go:embed schema/indexes.sql
	proposedIndexes string
)

// ApplySchema loads the platform's schema into an empty database: for
// PostgreSQL schema/postgres.sql plus the proposed schema/indexes.sql, for
// SQLite (sqlite:PATH, created if missing) schema/sqlite.sql.
func ApplySchema(ctx context.Context, url string) error {
	return applySchema(ctx, url, true)
}

func applySchema(ctx context.Context, url string, withIndexes bool) error {
	switch {
	case isPostgresURL(url):
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return fmt.Errorf("%w: apply schema: %w", ErrUnavailable, err)
		}
		defer conn.Close(ctx)
		script := postgresSchema
		if withIndexes {
			script += "\n" + proposedIndexes
		}
		// Without arguments pgx uses the simple protocol, which runs a
		// multi-statement script in one implicit transaction.
		if _, err := conn.Exec(ctx, script); err != nil {
			return fmt.Errorf("backend: apply schema: %w", err)
		}
		return nil
	case strings.HasPrefix(url, "sqlite:"):
		path := strings.TrimPrefix(url, "sqlite:")
		if path == "" {
			return errors.New("backend: sqlite URL must be sqlite:PATH")
		}
		db, err := sql.Open("sqlite", path)
		if err != nil {
			return fmt.Errorf("%w: apply schema: %w", ErrUnavailable, err)
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, sqliteSchema); err != nil {
			return fmt.Errorf("backend: apply schema: %w", err)
		}
		return nil
	}
	return errors.New("backend: database URL must be a postgres:// or sqlite: URL")
}
