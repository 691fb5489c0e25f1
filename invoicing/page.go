package invoicing

import "time"

// Page is the API's list envelope (InvoicePage and ClientPage in
// gateway/apidocs/openapi.yaml).
type Page[T any] struct {
	Data     []T   `json:"data"` // empty array, never null
	Total    int64 `json:"total"`
	Page     int   `json:"page"` // 0 for a page reached by position (After)
	PageSize int   `json:"pageSize"`
	// Next is where the next page starts (the last item's position), nil on
	// the last page. The gateway hands it out as an opaque cursor.
	Next *Position `json:"-"`
}

// Position is one item's place in a list's total order: its sort time and
// id. A list asked to start After a position continues exactly there, so a
// walk never repeats or skips an item while others are inserted.
type Position struct {
	// At is the item's sort time: issuedAt for invoices (nil for a draft),
	// createdAt for clients, updatedAt for either with UpdatedSince.
	At *time.Time
	ID string
}

// InvoiceFilter selects invoices. Zero values mean "no filter"; Page and
// PageSize must be set (1.., 1..100).
type InvoiceFilter struct {
	Status   string // DRAFT, ISSUED, PAID, CANCELLED, OVERDUE (derived status)
	Type     string // FT, FR, FS, NC, ND, PF
	From, To string // inclusive YYYY-MM-DD on the issue date in Africa/Luanda
	// UpdatedSince selects what changed at or after it, in updatedAt then id
	// order (oldest first) instead of the list's usual order.
	UpdatedSince *time.Time
	// After continues the list after this position (Page is then 1).
	After    *Position
	Page     int
	PageSize int
}

// ClientFilter selects clients.
type ClientFilter struct {
	Search       string     // case-insensitive substring of the name, or the NIF
	UpdatedSince *time.Time // as InvoiceFilter's
	After        *Position  // as InvoiceFilter's
	Page         int
	PageSize     int
}
