package invoicing

// Page is the API's list envelope (API document 2.3).
type Page[T any] struct {
	Data     []T   `json:"data"` // empty array, never null
	Total    int64 `json:"total"`
	Page     int   `json:"page"`
	PageSize int   `json:"pageSize"`
}

// InvoiceFilter selects invoices. Zero values mean "no filter"; Page and
// PageSize must be set (1.., 1..100).
type InvoiceFilter struct {
	Status   string // DRAFT, ISSUED, PAID, CANCELLED, OVERDUE (derived status)
	Type     string // FT, FR, FS, NC, ND, PF
	From, To string // inclusive YYYY-MM-DD on the issue date in Africa/Luanda
	Page     int
	PageSize int
}

// ClientFilter selects clients.
type ClientFilter struct {
	Search   string // case-insensitive substring of the name, or the NIF
	Page     int
	PageSize int
}
