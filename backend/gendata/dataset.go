// Package gendata makes realistic data in the invoicing platform's schema for
// demos, tests and benchmarks, reproducible from a seed, and writes it into a
// PostgreSQL or SQLite database that already holds the schema
// (backend.ApplySchema).
package gendata

import (
	"time"
)

// Dataset is a set of platform rows, written in this order (so that every
// reference points to a row written before it).
type Dataset struct {
	Companies   []Company
	Customers   []Customer
	Documents   []Document
	Submissions []Submission
}

// Company is a companies row.
type Company struct {
	ID, LegalName, NIF, Status string
	CreatedAt                  time.Time
}

// Customer is a customers row. Kind is "C", "I" or nil.
type Customer struct {
	ID, CompanyID, Name              string
	NIF, Email, Phone, Address, Kind *string
	CreatedAt                        time.Time
	UpdatedAt                        time.Time // zero means CreatedAt
	DeletedAt                        *time.Time
}

// Document is a documents row with its lines. Money is decimal text.
type Document struct {
	ID, CompanyID, DocType, Series string
	Seq                            int
	State                          string
	CustomerID                     *string
	CustomerName                   string
	CustomerNIF                    *string
	Currency                       string
	NetTotal, TaxTotal, GrossTotal string
	IssuedAt                       *time.Time
	DueDate                        *string // YYYY-MM-DD
	RelatedID                      *string
	CreatedAt                      time.Time
	UpdatedAt                      time.Time // zero means CreatedAt
	Lines                          []Line
}

// Line is a document_lines row; decimals are text.
type Line struct {
	LineNo                                  int
	Description                             string
	Quantity, UnitPrice, TaxRate, LineTotal string
}

// Submission is an agt_submissions row with its documents.
type Submission struct {
	ID, CompanyID string
	RequestID     *string
	SubmittedAt   time.Time
	ResultCode    *int16
	CheckedAt     *time.Time
	Documents     []SubmissionDocument
}

// SubmissionDocument is an agt_submission_documents row. Status is "V", "I"
// or nil; Errors is AGT's JSON error list or nil.
type SubmissionDocument struct {
	DocumentID string
	Status     *string
	Errors     *string
}

// Ptr returns a pointer to v (rows have many nullable columns).
func Ptr[T any](v T) *T { return &v }
