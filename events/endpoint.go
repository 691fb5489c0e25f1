package events

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Bounds of endpoints.
const (
	// MaxEndpoints is how many endpoints a company may have in one mode.
	MaxEndpoints = 10
	// MaxDescription bounds an endpoint's description, in bytes.
	MaxDescription = 500
	// MaxOverlap bounds a secret rotation's overlap; DefaultOverlap is used
	// when none is given (a day: time to deploy the new secret).
	MaxOverlap     = 30 * 24 * time.Hour
	DefaultOverlap = 24 * time.Hour
)

// Errors of endpoint management, each with its kind and the API's code.
var (
	ErrInvalidWebhook = invoicing.Define(invoicing.Error{Kind: invoicing.Invalid, Code: "invalid_body", Title: "Invalid request body", Message: "invalid webhook endpoint"})
	ErrWebhookLimit   = invoicing.Define(invoicing.Error{Kind: invoicing.Conflict, Code: "webhook_endpoint_limit_reached", Title: "Webhook endpoint limit reached",
		Detail: "The company already has the maximum of 10 webhook endpoints in this mode; delete one first.", Message: "events: endpoint limit reached"})
	ErrNotFound    = invoicing.Define(invoicing.Error{Kind: invoicing.NotFound, Code: "not_found", Title: "Resource not found", Detail: "No such resource.", Message: "events: endpoint not found"})
	ErrUnavailable = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: "events_unavailable", Title: "Events unavailable",
		Detail: "Webhook endpoints and deliveries cannot be read or changed right now; retry later.", Message: "events: Redis unavailable"})
)

// Webhook is where a company's events of one mode are sent. Its secrets are
// never part of its JSON: the secret is shown once, when it is made.
type Webhook struct {
	ID          string         `json:"id"`
	CompanyID   string         `json:"companyId"`
	Mode        invoicing.Mode `json:"mode"`
	URL         string         `json:"url"`
	Types       []Type         `json:"types"` // empty: every type
	Description string         `json:"description"`
	Enabled     bool           `json:"enabled"`
	CreatedAt   time.Time      `json:"createdAt"`
	UpdatedAt   time.Time      `json:"updatedAt"`
	// ExpiresAt ends a temporary endpoint (one registered by a tool for a
	// while); nil: never.
	ExpiresAt *time.Time `json:"expiresAt"`
	Health    Health     `json:"health"`
	// SecretRotatedAt is when the current secret was made; PreviousSecretUntil
	// is when the one before stops being used to sign (nil: no overlap now).
	SecretRotatedAt     time.Time  `json:"secretRotatedAt"`
	PreviousSecretUntil *time.Time `json:"previousSecretUntil"`

	secrets []secret
}

// Health is how the endpoint's deliveries have gone.
type Health struct {
	LastSuccessAt *time.Time `json:"lastSuccessAt"`
	// FailingSince is the first failure after the last success; nil while
	// the last delivery succeeded. An endpoint failing for DisableAfter is
	// disabled.
	FailingSince *time.Time `json:"failingSince"`
	LastError    string     `json:"lastError"`
	// DisabledAt and DisabledReason say when and why the endpoint stopped
	// (by its failures, or by a person); nil and "" while enabled.
	DisabledAt     *time.Time `json:"disabledAt"`
	DisabledReason string     `json:"disabledReason"`
}

// secret is a signing secret as stored: sealed to the operator's key
// (secrets.go) or, stored before sealing was configured, in plain text.
// Until is zero for the current one, and the end of the overlap for the one
// it replaced.
type secret struct {
	Secret string    `json:"s"`
	Until  time.Time `json:"u,omitzero"`
}

// config is what the endpoint's "cfg" field holds.
type config struct {
	CompanyID   string         `json:"company"`
	Mode        invoicing.Mode `json:"mode"`
	URL         string         `json:"url"`
	Types       []Type         `json:"types"`
	Description string         `json:"desc"`
	CreatedAt   time.Time      `json:"created"`
	UpdatedAt   time.Time      `json:"updated"`
	ExpiresAt   *time.Time     `json:"expires,omitempty"`
	RotatedAt   time.Time      `json:"rotated"`
	Secrets     []secret       `json:"secrets"`
}

// Wants reports whether the endpoint subscribes to t.
func (e *Webhook) Wants(t Type) bool { return len(e.Types) == 0 || slices.Contains(e.Types, t) }

// NewWebhook is what an endpoint is made of.
type NewWebhook struct {
	CompanyID   string
	Mode        invoicing.Mode
	URL         string
	Types       []string // empty: every type
	Description string
	Disabled    bool       // created disabled
	ExpiresAt   *time.Time // nil: never
}

// Patch changes an endpoint; nil fields stay as they are.
type Patch struct {
	URL         *string
	Types       *[]string
	Description *string
	Enabled     *bool
	// ExpiresAt moves a temporary endpoint's end (a tool keeping its
	// endpoint while it runs); it must be in the future.
	ExpiresAt *time.Time
}

// checkDescription refuses a description too long, or with control,
// invisible or direction-changing characters (invoicing.HiddenRune).
func checkDescription(s string) error {
	if len(s) > MaxDescription || !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return invoicing.InvalidField(ErrInvalidWebhook, "description", "must be at most %d bytes of printable text", MaxDescription)
	}
	if r, ok := invoicing.HiddenRune(s); ok {
		return invoicing.InvalidField(ErrInvalidWebhook, "description", "%s", invoicing.HiddenMessage(r))
	}
	return nil
}

// newEndpointID makes an endpoint id: ep_ and 26 random base32 characters.
func newEndpointID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "ep_" + idEncoding.EncodeToString(b[:])
}

// decodeEndpoint builds an endpoint from its hash (HGETALL); ok is false
// when there is none.
func decodeEndpoint(id string, h map[string]string) (Webhook, bool, error) {
	raw, ok := h["cfg"]
	if !ok {
		return Webhook{}, false, nil
	}
	var c config
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return Webhook{}, false, fmt.Errorf("events: endpoint %s: corrupt record: %w", id, err)
	}
	e := Webhook{ID: id, CompanyID: c.CompanyID, Mode: c.Mode, URL: c.URL, Types: c.Types, Description: c.Description,
		Enabled: h["enabled"] == "1", CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, ExpiresAt: c.ExpiresAt,
		SecretRotatedAt: c.RotatedAt, secrets: c.Secrets}
	if e.Types == nil {
		e.Types = []Type{}
	}
	for _, s := range c.Secrets {
		if !s.Until.IsZero() {
			u := s.Until
			e.PreviousSecretUntil = &u
		}
	}
	e.Health = Health{LastSuccessAt: msTime(h["ok"]), FailingSince: msTime(h["failing"]), LastError: h["err"],
		DisabledAt: msTime(h["disabled"]), DisabledReason: h["why"]}
	return e, true, nil
}

func (e *Webhook) config() config {
	return config{CompanyID: e.CompanyID, Mode: e.Mode, URL: e.URL, Types: e.Types, Description: e.Description,
		CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, ExpiresAt: e.ExpiresAt, RotatedAt: e.SecretRotatedAt, Secrets: e.secrets}
}

// msTime reads a time kept as Unix milliseconds; nil for "" or garbage.
func msTime(s string) *time.Time {
	var ms int64
	if _, err := fmt.Sscan(s, &ms); err != nil || ms <= 0 {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}
