package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
)

// KeyView is a key as the admin API and the CLI show it: never the secret.
type KeyView struct {
	ID         string     `json:"id"`
	CompanyID  string     `json:"companyId"`
	Mode       string     `json:"mode"`
	Scopes     []string   `json:"scopes"`
	Name       string     `json:"name"`
	Hint       string     `json:"hint"`
	State      string     `json:"state"` // active, expired or revoked, now
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
	ExpiresAt  *time.Time `json:"expiresAt"`
	Replaces   *string    `json:"replaces"`   // the key this one was rolled from
	ReplacedBy *string    `json:"replacedBy"` // the key this one was rolled to
	// AllowedCIDRs are the networks the key is accepted from; empty: any.
	AllowedCIDRs []string `json:"allowedCidrs"`
	// Key is the secret, set only in the answer to a creation or a roll.
	Key string `json:"key,omitempty"`
}

// viewKey renders k for the admin API, the CLI and the audit log.
func (s *Server) viewKey(k authz.Key) KeyView {
	scopes := make([]string, 0, 3)
	for _, sc := range k.Scopes.List() {
		scopes = append(scopes, string(sc))
	}
	nets := make([]string, 0, len(k.AllowedCIDRs))
	for _, p := range k.AllowedCIDRs {
		nets = append(nets, p.String())
	}
	return KeyView{ID: k.ID, CompanyID: k.CompanyID, Mode: string(k.Mode), Scopes: scopes, Name: k.Name,
		Hint: k.Hint, State: k.Status(s.now()), CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt,
		ExpiresAt: k.ExpiresAt, Replaces: optional(k.Replaces), ReplacedBy: optional(k.ReplacedBy), AllowedCIDRs: nets}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// KeySpec is what a new key is made of.
type KeySpec struct {
	CompanyID string
	Mode      invoicing.Mode
	Scopes    authz.ScopeSet
	Name      string
	ExpiresAt *time.Time // nil: never
	// AllowedCIDRs are CIDRs or addresses (authz.ParseCIDRs); none: any.
	AllowedCIDRs []string
}

// CreateKey creates a key for an existing company and records who did; it
// is the one path used by the admin API and by "gateway keys create".
func (s *Server) CreateKey(ctx context.Context, actor string, spec KeySpec) (KeyView, error) {
	if err := checkActor(actor); err != nil {
		return KeyView{}, err
	}
	nets, err := authz.ParseCIDRs(spec.AllowedCIDRs)
	if err != nil {
		return KeyView{}, &Error{Code: "invalid_body", Detail: err.Error(), Fields: []FieldError{{"allowedCidrs", err.Error()}}, Err: err}
	}
	companyID, err := s.knownCompany(ctx, spec.CompanyID)
	if err != nil {
		return KeyView{}, err
	}
	k, secret, err := s.keys.Create(ctx, authz.NewKey{CompanyID: companyID, Mode: spec.Mode, Scopes: spec.Scopes,
		Name: spec.Name, ExpiresAt: spec.ExpiresAt, AllowedCIDRs: nets})
	if err != nil {
		return KeyView{}, err
	}
	s.recordKey(ctx, actor, audit.ActionKeyCreated, k.CreatedAt, nil, k)
	v := s.viewKey(k)
	v.Key = secret
	return v, nil
}

// RolledView is the answer to a roll: the new key, with its secret shown
// this once and what it replaces, and the old key as it now is.
type RolledView struct {
	KeyView
	Previous KeyView `json:"previous"`
}

// RollKey replaces a key by a new secret with the same grants; the old key
// keeps working for overlap (authz.Keyring.Roll). The one path of the admin
// API and "gateway keys roll".
func (s *Server) RollKey(ctx context.Context, actor, keyID string, overlap time.Duration) (RolledView, error) {
	if err := checkActor(actor); err != nil {
		return RolledView{}, err
	}
	old, err := s.keys.Get(ctx, keyID)
	if err != nil {
		return RolledView{}, err
	}
	r, err := s.keys.Roll(ctx, keyID, overlap)
	if err != nil {
		return RolledView{}, err
	}
	s.recordKey(ctx, actor, audit.ActionKeyRolled, r.New.CreatedAt, &old, r.Old)
	s.recordKey(ctx, actor, audit.ActionKeyCreated, r.New.CreatedAt, nil, r.New)
	v := RolledView{KeyView: s.viewKey(r.New), Previous: s.viewKey(r.Old)}
	v.Key = r.Secret
	return v, nil
}

// ListKeys lists a company's keys, newest first, never with secrets.
func (s *Server) ListKeys(ctx context.Context, companyID string) ([]KeyView, error) {
	companyID, err := parseCompany(companyID)
	if err != nil {
		return nil, err
	}
	keys, err := s.keys.List(ctx, companyID)
	if err != nil {
		return nil, err
	}
	out := make([]KeyView, 0, len(keys))
	for _, k := range keys {
		out = append(out, s.viewKey(k))
	}
	return out, nil
}

// RevokeKey revokes a key by id; every instance refuses it within a second.
// Revoking a revoked key changes nothing and records nothing.
func (s *Server) RevokeKey(ctx context.Context, actor, keyID string) (KeyView, error) {
	if err := checkActor(actor); err != nil {
		return KeyView{}, err
	}
	k, revoked, err := s.keys.Revoke(ctx, keyID)
	if err != nil {
		return KeyView{}, err
	}
	if revoked {
		before := k
		before.State, before.RevokedAt = authz.StateActive, nil
		s.recordKey(ctx, actor, audit.ActionKeyRevoked, *k.RevokedAt, &before, k)
	}
	return s.viewKey(k), nil
}

// LimitsView is a company's limits as the admin API and the CLI show them.
type LimitsView struct {
	CompanyID string    `json:"companyId"`
	Live      LimitView `json:"live"`
	Test      LimitView `json:"test"`
}

// LimitView is one mode's limit; Custom is false while the default applies.
type LimitView struct {
	Rate   float64 `json:"rate"`
	Burst  int     `json:"burst"`
	Custom bool    `json:"custom"`
}

// CompanyLimits reads a company's limits.
func (s *Server) CompanyLimits(ctx context.Context, companyID string) (LimitsView, error) {
	companyID, err := parseCompany(companyID)
	if err != nil {
		return LimitsView{}, err
	}
	l, err := s.limiter.Limits(ctx, companyID)
	if err != nil {
		return LimitsView{}, err
	}
	return LimitsView{CompanyID: companyID,
		Live: LimitView{l.Live.Rate, l.Live.Burst, l.LiveCustom},
		Test: LimitView{l.Test.Rate, l.Test.Burst, l.TestCustom}}, nil
}

// SetCompanyLimit overrides a company's limit for one mode (LIVE or TEST in
// any letter case; "" for both), and records who did.
func (s *Server) SetCompanyLimit(ctx context.Context, actor, companyID, mode string, rate float64, burst int) (LimitsView, error) {
	if err := checkActor(actor); err != nil {
		return LimitsView{}, err
	}
	companyID, err := parseCompany(companyID)
	if err != nil {
		return LimitsView{}, err
	}
	var m invoicing.Mode
	if mode != "" {
		if m, err = invoicing.ParseMode(mode); err != nil {
			return LimitsView{}, err
		}
	}
	before, err := s.CompanyLimits(ctx, companyID)
	if err != nil {
		return LimitsView{}, err
	}
	if err := s.limiter.SetLimit(ctx, companyID, m, tenants.Limit{Rate: rate, Burst: burst}); err != nil {
		return LimitsView{}, err
	}
	return s.limitsChanged(ctx, actor, audit.ActionLimitsSet, before)
}

// ResetCompanyLimits puts a company back on the default limits, and records
// who did.
func (s *Server) ResetCompanyLimits(ctx context.Context, actor, companyID string) (LimitsView, error) {
	if err := checkActor(actor); err != nil {
		return LimitsView{}, err
	}
	companyID, err := parseCompany(companyID)
	if err != nil {
		return LimitsView{}, err
	}
	before, err := s.CompanyLimits(ctx, companyID)
	if err != nil {
		return LimitsView{}, err
	}
	if err := s.limiter.ResetLimits(ctx, companyID); err != nil {
		return LimitsView{}, err
	}
	return s.limitsChanged(ctx, actor, audit.ActionLimitsReset, before)
}

// limitsChanged reads a company's limits after a change and records it.
func (s *Server) limitsChanged(ctx context.Context, actor, action string, before LimitsView) (LimitsView, error) {
	after, err := s.CompanyLimits(ctx, before.CompanyID)
	if err != nil {
		return LimitsView{}, err
	}
	s.record(ctx, audit.Entry{Actor: actor, CompanyID: before.CompanyID, Action: action}, before, after)
	return after, nil
}

// parseCompany reads a company id given to the admin API or the command line.
func parseCompany(id string) (string, error) {
	c, err := invoicing.ParseCompanyID(id)
	if err != nil {
		return "", &Error{Code: "unknown_company", Detail: "No company " + invoicing.Clip(id) + " exists on the platform: a company id is a UUID.", Err: err}
	}
	return c, nil
}

// knownCompany reads a company id and checks that the platform knows it, so
// that a mistyped id is said to be one instead of reading as a company
// without keys or requests. A Server without a live database (the command
// line's Redis-only commands) checks the id's form only.
func (s *Server) knownCompany(ctx context.Context, id string) (string, error) {
	c, err := parseCompany(id)
	if err != nil || s.live == nil {
		return c, err
	}
	if _, err := s.live.Company(ctx, c); err != nil {
		if errors.Is(err, backend.ErrNotFound) {
			return "", &Error{Code: "unknown_company", Detail: "No company " + c + " exists on the platform.", Err: err}
		}
		return "", err
	}
	return c, nil
}
