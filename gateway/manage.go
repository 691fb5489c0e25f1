package gateway

import (
	"context"
	"errors"
	"time"

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
	State      string     `json:"state"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
	// Key is the secret, set only in the answer to a creation.
	Key string `json:"key,omitempty"`
}

// ViewKey renders k for the admin API and the CLI.
func ViewKey(k authz.Key) KeyView {
	scopes := make([]string, 0, 3)
	for _, sc := range k.Scopes.List() {
		scopes = append(scopes, string(sc))
	}
	return KeyView{ID: k.ID, CompanyID: k.CompanyID, Mode: string(k.Mode), Scopes: scopes, Name: k.Name,
		Hint: k.Hint, State: k.State, CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt}
}

// CreateKey creates a key for an existing company; it is the one path used
// by the admin API and by "gateway keys create".
func (s *Server) CreateKey(ctx context.Context, companyID string, mode invoicing.Mode, scopes authz.ScopeSet, name string) (KeyView, error) {
	companyID, err := s.knownCompany(ctx, companyID)
	if err != nil {
		return KeyView{}, err
	}
	k, secret, err := s.keys.Create(ctx, authz.NewKey{CompanyID: companyID, Mode: mode, Scopes: scopes, Name: name})
	if err != nil {
		return KeyView{}, err
	}
	v := ViewKey(k)
	v.Key = secret
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
		out = append(out, ViewKey(k))
	}
	return out, nil
}

// RevokeKey revokes a key by id; every instance refuses it within a second.
func (s *Server) RevokeKey(ctx context.Context, keyID string) (KeyView, error) {
	k, err := s.keys.Revoke(ctx, keyID)
	if err != nil {
		return KeyView{}, err
	}
	return ViewKey(k), nil
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
// any letter case; "" for both).
func (s *Server) SetCompanyLimit(ctx context.Context, companyID, mode string, rate float64, burst int) (LimitsView, error) {
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
	if err := s.limiter.SetLimit(ctx, companyID, m, tenants.Limit{Rate: rate, Burst: burst}); err != nil {
		return LimitsView{}, err
	}
	return s.CompanyLimits(ctx, companyID)
}

// ResetCompanyLimits puts a company back on the default limits.
func (s *Server) ResetCompanyLimits(ctx context.Context, companyID string) (LimitsView, error) {
	companyID, err := parseCompany(companyID)
	if err != nil {
		return LimitsView{}, err
	}
	if err := s.limiter.ResetLimits(ctx, companyID); err != nil {
		return LimitsView{}, err
	}
	return s.CompanyLimits(ctx, companyID)
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
