// Package client is a Go client of the invoicing platform's public API (the
// gateway's OpenAPI document, gateway/apidocs/openapi.yaml): the code
// oapi-codegen generates from the document with its default settings
// (client.gen.go: the types, and Client/ClientWithResponses, one method per
// operation), and a small layer that every integrator would otherwise write
// (this file, pages.go, retry.go, problem.go, webhook.go):
//
//   - API: the operations with the key and company sent on every call,
//     errors as *Problem (usable with errors.As), money exact (json.Number);
//   - Invoices and Clients: every item of a list, by cursor (iter.Seq2);
//   - Events and PollEvents: the events feed, walked and polled by cursor;
//   - retries of 429 and 503 after Retry-After, bounded;
//   - an Idempotency-Key on every create, the same on its own retries;
//   - WebhookVerifier: the deliveries of the API's events checked (Standard
//     Webhooks signatures and timestamps) and their data decoded.
//
// The generated half also has oapi-codegen's WebhookInitiator, which sends
// the document's webhooks: the gateway sends them, signed; a receiver needs
// only WebhookVerifier.
//
// Only the generated half depends on the document; `go generate` rewrites it
// and TestGeneratedCodeIsCurrent fails when it was not.
package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Config configures an API. BaseURL, APIKey and CompanyID are required.
type Config struct {
	// BaseURL is the gateway's origin, such as https://api.invoicing.ao
	// (the paths carry /api/v1/v1 themselves).
	BaseURL string
	// APIKey is sent as Authorization: Bearer <APIKey> (igw_live_… or igw_test_…).
	APIKey string
	// CompanyID is the company every call acts for (X-Company-Id).
	CompanyID string
	// HTTPClient sends the requests; nil means an http.Client with a 30 s
	// timeout per attempt.
	HTTPClient HttpRequestDoer
	// MaxRetries is how many times one call is retried after a 429 or a 503;
	// zero means 3, a negative value none.
	MaxRetries int
	// MaxRetryWait bounds one wait: an answer asking for a longer one is
	// returned as it is (its *Problem) rather than waited for. Zero means 60 s.
	MaxRetryWait time.Duration
	// Sleep waits d before a retry, or returns ctx's error when ctx ends
	// first; nil means a timer. Tests inject one.
	Sleep func(ctx context.Context, d time.Duration) error
}

// API calls the gateway for one company with one key.
type API struct {
	gen *ClientWithResponses
}

// New checks cfg and returns an API. It sends nothing.
func New(cfg Config) (*API, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: BaseURL %q is not an http(s) origin such as https://api.invoicing.ao", cfg.BaseURL)
	}
	if cfg.APIKey == "" || cfg.CompanyID == "" {
		return nil, errors.New("client: APIKey and CompanyID are required")
	}
	doer := cfg.HTTPClient
	if doer == nil {
		doer = &http.Client{Timeout: 30 * time.Second}
	}
	r := &retrying{next: doer, maxRetries: cfg.MaxRetries, maxWait: cfg.MaxRetryWait, sleep: cfg.Sleep, now: time.Now}
	switch {
	case r.maxRetries == 0:
		r.maxRetries = 3
	case r.maxRetries < 0:
		r.maxRetries = 0
	}
	if r.maxWait <= 0 {
		r.maxWait = 60 * time.Second
	}
	if r.sleep == nil {
		r.sleep = sleep
	}
	auth := "Bearer " + cfg.APIKey
	gen, err := NewClientWithResponses(cfg.BaseURL, WithHTTPClient(r),
		WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", auth)
			req.Header.Set("X-Company-Id", cfg.CompanyID)
			return nil
		}))
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return &API{gen: gen}, nil
}

// Generated is the generated client behind a, with the same key, company and
// retries: for what this layer does not wrap, such as an answer's headers
// (RateLimit, X-Request-Id, Location).
func (a *API) Generated() *ClientWithResponses { return a.gen }

// ListInvoices returns one page of invoices (Invoices walks them all).
func (a *API) ListInvoices(ctx context.Context, params ListInvoicesParams) (*InvoicePage, error) {
	return answerOf[InvoicePage](a.gen.ListInvoicesWithResponse(ctx, &params))
}

// GetInvoice returns one invoice with its transmission to the tax authority.
func (a *API) GetInvoice(ctx context.Context, id Id) (*InvoiceDetail, error) {
	return answerOf[InvoiceDetail](a.gen.GetInvoiceWithResponse(ctx, id, nil))
}

// ListClients returns one page of clients (Clients walks them all).
func (a *API) ListClients(ctx context.Context, params ListClientsParams) (*ClientPage, error) {
	return answerOf[ClientPage](a.gen.ListClientsWithResponse(ctx, &params))
}

// GetClient returns one client.
func (a *API) GetClient(ctx context.Context, id Id) (*ClientRecord, error) {
	return answerOf[ClientRecord](a.gen.GetClientWithResponse(ctx, id, nil))
}

// CreateClient creates a client under a new idempotency key, the same on
// each of its retries (NewIdempotencyKey, CreateClientWithKey).
func (a *API) CreateClient(ctx context.Context, in ClientInput) (*ClientRecord, error) {
	return a.CreateClientWithKey(ctx, NewIdempotencyKey(), in)
}

// CreateClientWithKey creates a client under the caller's idempotency key:
// keep the key with the intent (say, in a database row) and call again with
// it after a crash or a timeout, so that the gateway can tell a retry from a
// second client.
func (a *API) CreateClientWithKey(ctx context.Context, key string, in ClientInput) (*ClientRecord, error) {
	if key == "" {
		return nil, errors.New("client: an empty idempotency key")
	}
	return answerOf[ClientRecord](a.gen.CreateClientWithResponse(ctx, &CreateClientParams{IdempotencyKey: &key}, in))
}

// generated is a generated operation's response: its success body (nil
// when the answer was not a success), the HTTP answer and its body.
type generated[T any] interface {
	result() (*T, *http.Response, []byte)
}

func (r *ListInvoicesResponse) result() (*InvoicePage, *http.Response, []byte) {
	return r.JSON200, r.HTTPResponse, r.Body
}
func (r *GetInvoiceResponse) result() (*InvoiceDetail, *http.Response, []byte) {
	return r.JSON200, r.HTTPResponse, r.Body
}
func (r *ListClientsResponse) result() (*ClientPage, *http.Response, []byte) {
	return r.JSON200, r.HTTPResponse, r.Body
}
func (r *GetClientResponse) result() (*ClientRecord, *http.Response, []byte) {
	return r.JSON200, r.HTTPResponse, r.Body
}
func (r *CreateClientResponse) result() (*ClientRecord, *http.Response, []byte) {
	return r.JSON201, r.HTTPResponse, r.Body
}

// answerOf is a generated call's success body, or its answer as a *Problem,
// or the call's own error.
func answerOf[T any, R generated[T]](res R, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	ok, hr, body := res.result()
	if ok != nil {
		return ok, nil
	}
	return nil, problemFrom(hr, body)
}
