package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend"
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
func (s *Server) CreateKey(ctx context.Context, companyID string, mode authz.Mode, scopes authz.ScopeSet, name string) (KeyView, error) {
	companyID = strings.ToLower(strings.TrimSpace(companyID))
	if _, err := s.live.Company(ctx, companyID); err != nil {
		if errors.Is(err, backend.ErrNotFound) {
			return KeyView{}, &Error{Code: "unknown_company", Detail: "No company " + companyID + " exists on the platform.", Err: err}
		}
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
	keys, err := s.keys.List(ctx, strings.ToLower(strings.TrimSpace(companyID)))
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
	companyID = strings.ToLower(strings.TrimSpace(companyID))
	l, err := s.limiter.Limits(ctx, companyID)
	if err != nil {
		return LimitsView{}, err
	}
	return LimitsView{CompanyID: companyID,
		Live: LimitView{l.Live.Rate, l.Live.Burst, l.LiveCustom},
		Test: LimitView{l.Test.Rate, l.Test.Burst, l.TestCustom}}, nil
}

// SetCompanyLimit overrides a company's limit for one mode ("" for both).
func (s *Server) SetCompanyLimit(ctx context.Context, companyID, mode string, rate float64, burst int) (LimitsView, error) {
	companyID = strings.ToLower(strings.TrimSpace(companyID))
	if err := s.limiter.SetLimit(ctx, companyID, strings.ToUpper(mode), tenants.Limit{Rate: rate, Burst: burst}); err != nil {
		return LimitsView{}, err
	}
	return s.CompanyLimits(ctx, companyID)
}

// ResetCompanyLimits puts a company back on the default limits.
func (s *Server) ResetCompanyLimits(ctx context.Context, companyID string) (LimitsView, error) {
	companyID = strings.ToLower(strings.TrimSpace(companyID))
	if err := s.limiter.ResetLimits(ctx, companyID); err != nil {
		return LimitsView{}, err
	}
	return s.CompanyLimits(ctx, companyID)
}

// AdminHandler is the internal listener's handler: key and limit management
// for the platform's dashboard, behind the admin token. It is never mounted
// on the public listener.
func (s *Server) AdminHandler() http.Handler {
	r := newRouter()
	r.HandlerFunc(http.MethodGet, "/healthz", s.healthz)
	r.HandlerFunc(http.MethodGet, "/readyz", s.readyz)
	r.POST("/admin/v1/keys", s.adminOnly(s.adminCreateKey))
	r.GET("/admin/v1/keys", s.adminOnly(s.adminListKeys))
	r.GET("/admin/v1/keys/:id", s.adminOnly(s.adminGetKey))
	r.DELETE("/admin/v1/keys/:id", s.adminOnly(s.adminRevokeKey))
	r.GET("/admin/v1/companies/:id/limits", s.adminOnly(s.adminGetLimits))
	r.PUT("/admin/v1/companies/:id/limits", s.adminOnly(s.adminSetLimits))
	r.DELETE("/admin/v1/companies/:id/limits", s.adminOnly(s.adminResetLimits))
	r.GET("/admin/v1/companies/:id/usage", s.adminOnly(s.adminUsage))
	// No token for /metrics: scrapers need no power over keys, and the
	// metrics hold no secret and no company data.
	r.Handler(http.MethodGet, "/metrics", s.metrics.handler())
	r.GET("/debug/pprof/*name", s.adminOnly(s.adminPprof))

	var h http.Handler = r
	h = withHeaderLimit(h)
	h = withSecurityHeaders(h)
	h = withRecover(h)
	h = accessLog(s.logger, s.now)(h)
	h = withRequestID(h)
	return h
}

// adminOnly requires "Authorization: Bearer <admin token>", compared in
// constant time. Without a configured token the admin API stays closed.
func (s *Server) adminOnly(h httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		stateFrom(r.Context()).Route = r.Method + " admin"
		if s.adminToken == "" {
			writeProblem(w, r, &Error{Code: "admin_disabled", Detail: "No admin token is configured (GATEWAY_ADMIN_TOKEN)."})
			return
		}
		tok, ok := bearer(r.Header.Get("Authorization"))
		if !ok || !tokenEqual(tok, s.adminToken) {
			writeProblem(w, r, &Error{Code: "unauthorized_admin", Detail: "Send Authorization: Bearer <admin token>."})
			return
		}
		h(w, r, p)
	}
}

func (s *Server) adminCreateKey(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	m, err := readJSONBody(w, r, []string{"companyId", "mode", "scopes", "name"})
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	var fe []FieldError
	company, _ := stringMember(m, "companyId", &fe)
	modeS, _ := stringMember(m, "mode", &fe)
	name, _ := stringMember(m, "name", &fe)
	mode, err := authz.ParseMode(modeS)
	if err != nil {
		fe = append(fe, FieldError{"mode", "must be LIVE or TEST"})
	}
	var scopeList []string
	var scopes authz.ScopeSet
	if raw, ok := m["scopes"]; !ok || json.Unmarshal(raw, &scopeList) != nil {
		fe = append(fe, FieldError{"scopes", "must be an array of scopes"})
	} else if scopes, err = authz.ParseScopes(strings.Join(scopeList, ",")); err != nil {
		fe = append(fe, FieldError{"scopes", err.Error()})
	}
	if company == "" {
		fe = append(fe, FieldError{"companyId", "is required"})
	}
	if len(fe) > 0 {
		writeProblem(w, r, &Error{Code: "invalid_body", Detail: "The key request is invalid.", Fields: fe})
		return
	}
	v, err := s.CreateKey(r.Context(), company, mode, scopes, name)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	w.Header().Set("Location", "/admin/v1/keys/"+v.ID)
	writeJSON(w, http.StatusCreated, v)
}

func (s *Server) adminListKeys(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	company := r.URL.Query().Get("companyId")
	if company == "" {
		writeProblem(w, r, &Error{Code: "invalid_parameter", Detail: "companyId is required.", Fields: []FieldError{{"companyId", "is required"}}})
		return
	}
	keys, err := s.ListKeys(r.Context(), company)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": keys})
}

func (s *Server) adminGetKey(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
	k, err := s.keys.Get(r.Context(), p.ByName("id"))
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ViewKey(k))
}

func (s *Server) adminRevokeKey(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
	v, err := s.RevokeKey(r.Context(), p.ByName("id"))
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) adminGetLimits(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
	v, err := s.CompanyLimits(r.Context(), p.ByName("id"))
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) adminSetLimits(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
	m, err := readJSONBody(w, r, []string{"mode", "rate", "burst"})
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	var fe []FieldError
	mode, _ := stringMember(m, "mode", &fe)
	var rate float64
	var burst int
	if raw, ok := m["rate"]; !ok || json.Unmarshal(raw, &rate) != nil {
		fe = append(fe, FieldError{"rate", "must be a number of requests per second"})
	}
	if raw, ok := m["burst"]; !ok || json.Unmarshal(raw, &burst) != nil {
		fe = append(fe, FieldError{"burst", "must be an integer"})
	}
	if len(fe) > 0 {
		writeProblem(w, r, &Error{Code: "invalid_body", Detail: "The limit is invalid.", Fields: fe})
		return
	}
	v, err := s.SetCompanyLimit(r.Context(), p.ByName("id"), mode, rate, burst)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) adminResetLimits(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
	v, err := s.ResetCompanyLimits(r.Context(), p.ByName("id"))
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
