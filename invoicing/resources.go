package invoicing

// Client is the API's client resource (ClientRecord in
// gateway/apidocs/openapi.yaml).
type Client struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	NIF       *string   `json:"nif"`
	Email     *string   `json:"email"`
	Phone     *string   `json:"phone"`
	Address   *string   `json:"address"`
	Type      *string   `json:"type"` // COMPANY, INDIVIDUAL or null
	CreatedAt Timestamp `json:"createdAt"`
	UpdatedAt Timestamp `json:"updatedAt"`
}

// NewClient is the input of CreateClient, already validated by the caller.
// The adapter normalizes NIF (spaces removed, upper case) and an Angolan phone
// to +244XXXXXXXXX before storing.
type NewClient struct {
	// ID is the id to create the client with (a canonical UUID), for a
	// create that may be retried; empty means a new random one.
	ID      string
	Name    string
	NIF     *string
	Email   *string
	Phone   *string
	Address *string
	Type    *string // COMPANY or INDIVIDUAL
}

// Invoice is the API's invoice resource (Invoice and InvoiceDetail in
// gateway/apidocs/openapi.yaml). Transmission is set only by GetInvoice.
type Invoice struct {
	ID           string          `json:"id"`
	Number       string          `json:"number"`
	Type         string          `json:"type"`
	Status       string          `json:"status"`
	TotalAmount  Decimal         `json:"totalAmount"`
	Currency     string          `json:"currency"`
	IssuedAt     *Timestamp      `json:"issuedAt"`
	DueDate      *string         `json:"dueDate"` // YYYY-MM-DD
	Customer     InvoiceCustomer `json:"customer"`
	Items        []InvoiceItem   `json:"items"`
	UpdatedAt    Timestamp       `json:"updatedAt"` // the document's last change on the platform
	Transmission *Transmission   `json:"transmission,omitempty"`
}

// InvoiceCustomer is the customer snapshot taken when the document was issued.
type InvoiceCustomer struct {
	ID   *string `json:"id"` // null for an anonymous final consumer
	Name string  `json:"name"`
	NIF  *string `json:"nif"`
}

// InvoiceItem is one document line, in line order.
type InvoiceItem struct {
	Description string  `json:"description"`
	Quantity    Decimal `json:"quantity"`
	UnitPrice   Decimal `json:"unitPrice"`
	Total       Decimal `json:"total"`
}

// Transmission is the state of the document's newest AGT submission.
type Transmission struct {
	Status      string              `json:"status"` // NOT_APPLICABLE, NOT_SENT, PENDING, VALID, INVALID
	RequestID   *string             `json:"requestId"`
	SubmittedAt *Timestamp          `json:"submittedAt"`
	CheckedAt   *Timestamp          `json:"checkedAt"`
	Errors      []TransmissionError `json:"errors"` // empty array, never null
}

// TransmissionError is one of AGT's reasons for rejecting a document.
type TransmissionError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Company is what the gateway needs to know of a platform company.
type Company struct {
	ID     string
	Name   string // the legal name
	NIF    string // the company's own tax number
	Status string // "active" or "suspended"
}

// CompanyQuery reads the platform's companies for the platform team, in
// (name, id) order after the position After (nil: from the first), at most
// Limit of them: those whose name contains Search (case-insensitive) or
// whose NIF contains it (spaces and case ignored), or, with IDs, those
// companies (canonical ids; unknown ones are left out).
type CompanyQuery struct {
	Search string
	IDs    []string
	After  *CompanyPosition
	Limit  int
}

// CompanyPosition is where a page of companies ends.
type CompanyPosition struct {
	Name, ID string
}
