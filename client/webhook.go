package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The errors of WebhookVerifier.Verify, for errors.Is: a receiver answers
// each with a 4xx (the gateway then retries the delivery), and may tell them
// apart in its logs.
var (
	// ErrWebhookHeaders: webhook-id, webhook-timestamp or webhook-signature
	// is missing, or the timestamp is not Unix seconds.
	ErrWebhookHeaders = errors.New("client: webhook headers missing or malformed")
	// ErrWebhookSignature: no signature of the delivery matches a secret
	// (a wrong secret, an altered body, or a delivery not sent by the gateway).
	ErrWebhookSignature = errors.New("client: no webhook signature matches")
	// ErrWebhookTimestamp: the signature matches, but webhook-timestamp is
	// further from the clock than the tolerance: a replay, or a clock off.
	ErrWebhookTimestamp = errors.New("client: webhook timestamp out of tolerance")
	// ErrWebhookBody: the signed body is not an event (type, timestamp,
	// data), or, for WebhookOwner, names no company and mode.
	ErrWebhookBody = errors.New("client: webhook body is not an event")
)

// DefaultWebhookTolerance is how far webhook-timestamp may be from the
// receiver's clock: Standard Webhooks' libraries' default.
const DefaultWebhookTolerance = 5 * time.Minute

// WebhookConfig configures a WebhookVerifier. Secrets is required.
type WebhookConfig struct {
	// Secrets are the endpoint's signing secrets (whsec_ and base64, as the
	// dashboard shows them). One is enough; during a rotation a delivery
	// carries a signature by each secret, so either verifies, and giving
	// both lets a receiver switch before or after the overlap.
	Secrets []string
	// Tolerance is how far webhook-timestamp may be from Now, before or
	// after; zero means DefaultWebhookTolerance (5 minutes).
	Tolerance time.Duration
	// Now is the receiver's clock; nil means time.Now. Tests inject one.
	Now func() time.Time
}

// WebhookVerifier checks the deliveries of the API's events (webhooks):
// Standard Webhooks 1.0 signatures (HMAC-SHA256 of id, timestamp and body)
// made with an endpoint's secret, and the timestamp's freshness, then reads
// the event. It holds no state: safe for concurrent use.
type WebhookVerifier struct {
	keys      [][]byte
	tolerance time.Duration
	now       func() time.Time
}

const secretPrefix = "whsec_"

// NewWebhookVerifier checks cfg's secrets. An error never quotes a secret.
func NewWebhookVerifier(cfg WebhookConfig) (*WebhookVerifier, error) {
	if len(cfg.Secrets) == 0 {
		return nil, errors.New("client: a webhook verifier needs the endpoint's secret (whsec_…)")
	}
	v := &WebhookVerifier{tolerance: cfg.Tolerance, now: cfg.Now}
	for i, s := range cfg.Secrets {
		raw, ok := strings.CutPrefix(strings.TrimSpace(s), secretPrefix)
		key, err := base64.StdEncoding.DecodeString(raw)
		// The gateway's secrets are 32 bytes; the specification allows 24 to 64.
		if !ok || err != nil || len(key) < 24 || len(key) > 64 {
			return nil, fmt.Errorf("client: webhook secret %d is not whsec_ and the base64 of 24 to 64 bytes", i+1)
		}
		v.keys = append(v.keys, key)
	}
	if v.tolerance <= 0 {
		v.tolerance = DefaultWebhookTolerance
	}
	if v.now == nil {
		v.now = time.Now
	}
	return v, nil
}

// WebhookEvent is a verified delivery's event.
type WebhookEvent struct {
	// ID is webhook-id: the same on every delivery of this event, so that a
	// receiver drops the ones it has processed.
	ID string
	// Type is what happened: invoice.issued, invoice.paid, invoice.cancelled,
	// invoice.overdue, invoice.transmission.updated, client.created or
	// client.updated (the generated InvoicePaid, ClientCreated… constants).
	// Types may be added: ignore one you do not know.
	Type string
	// Timestamp is when the change happened (not when it was sent): compare
	// it, and the resource's UpdatedAt, with what you hold, as deliveries
	// may arrive out of order.
	Timestamp time.Time
	// CompanyID and Mode say whose the event is: the company (the id that
	// X-Company-Id sends) and LIVE (its live data) or TEST (its sandbox).
	// A receiver that serves several companies, or both modes, from one
	// URL files the event under them (see WebhookOwner). Both are empty
	// only in a delivery of a gateway older than API 1.6.0.
	CompanyID string
	Mode      string
	// Data is the resource, as the API's GET answers it.
	Data json.RawMessage
}

// Verify checks a delivery's headers and its body, exactly as received (a
// re-encoded body no longer matches its signature), and returns its event.
// The signature is checked before the timestamp, so that ErrWebhookTimestamp
// means a delivery of the gateway, late or early by the receiver's clock.
func (v *WebhookVerifier) Verify(h http.Header, body []byte) (*WebhookEvent, error) {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return nil, fmt.Errorf("%w: webhook-id, webhook-timestamp and webhook-signature are required", ErrWebhookHeaders)
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: webhook-timestamp %q is not Unix seconds", ErrWebhookHeaders, clip(ts))
	}
	if !v.signed(id, ts, body, sigs) {
		return nil, ErrWebhookSignature
	}
	if skew := v.now().Sub(time.Unix(secs, 0)); skew > v.tolerance || skew < -v.tolerance {
		return nil, fmt.Errorf("%w: sent %s from this clock, tolerance %s", ErrWebhookTimestamp, skew.Round(time.Second), v.tolerance)
	}
	var e struct {
		Type      string          `json:"type"`
		Timestamp time.Time       `json:"timestamp"`
		CompanyID string          `json:"companyId"`
		Mode      string          `json:"mode"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Type == "" || e.Timestamp.IsZero() || len(e.Data) == 0 || string(e.Data) == "null" {
		return nil, ErrWebhookBody
	}
	return &WebhookEvent{ID: id, Type: e.Type, Timestamp: e.Timestamp, CompanyID: e.CompanyID, Mode: e.Mode, Data: e.Data}, nil
}

// WebhookOwner reads whose a delivery says its event is, its companyId and
// mode, before anything is verified, so that a receiver serving several
// companies (or both modes) from one URL can choose the verifier of that
// company's endpoint for that mode: each endpoint has its own secret. That
// verifier's Verify then proves them: the signature covers the body, so a
// delivery altered to name another company, or signed for another
// endpoint, does not verify with the named one's secret. Until then they
// are a claim: route nothing by them. A body without both is
// ErrWebhookBody (answer 400; the delivery is sent again).
func WebhookOwner(body []byte) (companyID, mode string, err error) {
	var o struct {
		CompanyID string `json:"companyId"`
		Mode      string `json:"mode"`
	}
	if json.Unmarshal(body, &o) != nil || o.CompanyID == "" || (o.Mode != "LIVE" && o.Mode != "TEST") {
		return "", "", ErrWebhookBody
	}
	return o.CompanyID, o.Mode, nil
}

// signed reports whether one v1 signature of the list matches one key;
// other versions are skipped, as the specification asks.
func (v *WebhookVerifier) signed(id, ts string, body []byte, list string) bool {
	for _, key := range v.keys {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id + "." + ts + "."))
		m.Write(body)
		want := m.Sum(nil)
		for _, s := range strings.Fields(list) {
			b64, ok := strings.CutPrefix(s, "v1,")
			if !ok {
				continue
			}
			got, err := base64.StdEncoding.DecodeString(b64)
			if err == nil && hmac.Equal(got, want) {
				return true
			}
		}
	}
	return false
}

// Invoice decodes the invoice of an invoice.* event: the invoice as Get
// invoice answers it, money exact.
func (e *WebhookEvent) Invoice() (*InvoiceDetail, error) {
	return decodeData[InvoiceDetail](e, "invoice.", "an invoice")
}

// Client decodes the client of a client.* event, as Get client answers it.
func (e *WebhookEvent) Client() (*ClientRecord, error) {
	return decodeData[ClientRecord](e, "client.", "a client")
}

func decodeData[T any](e *WebhookEvent, prefix, what string) (*T, error) {
	if !strings.HasPrefix(e.Type, prefix) {
		return nil, fmt.Errorf("client: a %q event does not carry %s", clip(e.Type), what)
	}
	var v T
	if err := json.Unmarshal(e.Data, &v); err != nil {
		return nil, fmt.Errorf("client: the data of a %q event: %w", clip(e.Type), err)
	}
	return &v, nil
}

// clip bounds what an error quotes of a request.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
