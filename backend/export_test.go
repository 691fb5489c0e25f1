package backend

import "context"

// ApplySchemaWithoutIndexes loads the schema without the proposed indexes, so
// tests prove the adapter does not depend on them.
func ApplySchemaWithoutIndexes(ctx context.Context, url string) error {
	return applySchema(ctx, url, false)
}
