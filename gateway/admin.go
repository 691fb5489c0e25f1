package gateway

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/gateway/apidocs"
	"github.com/invoicing-ao/gateway/gateway/console"
	"github.com/invoicing-ao/gateway/invoicing"
)

// AdminHandler is the internal listener's handler: key and limit management
// for the platform's dashboard, behind the admin token. It is never mounted
// on the public listener.
func (s *Server) AdminHandler() http.Handler {
	rt := newRoutes()
	rt.handle(http.MethodGet, "/healthz", "GET /healthz", s.healthz)
	rt.handle(http.MethodGet, "/readyz", "GET /readyz", s.readyz)
	s.adminRoute(rt, http.MethodPost, "/admin/v1/keys", s.adminCreateKey)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/keys", s.adminListKeys)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/keys/:id", s.adminGetKey)
	s.adminRoute(rt, http.MethodDelete, "/admin/v1/keys/:id", s.adminRevokeKey)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/limits", s.adminGetLimits)
	s.adminRoute(rt, http.MethodPut, "/admin/v1/companies/:id/limits", s.adminSetLimits)
	s.adminRoute(rt, http.MethodDelete, "/admin/v1/companies/:id/limits", s.adminResetLimits)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/usage", s.adminUsage)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/usage/minutes", s.adminMinutes)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/overview", s.adminOverview)
	// No token for /metrics: scrapers need no power over keys, and the
	// metrics hold no secret and no company data.
	rt.handle(http.MethodGet, "/metrics", "GET /metrics", func(http.ResponseWriter, *http.Request, httprouter.Params) (answer, error) {
		return answer{serve: s.metrics.handler()}, nil
	})
	s.adminRoute(rt, http.MethodGet, "/debug/pprof/*name", s.adminPprof)
	// The console is an app that asks for the token itself; its files hold
	// no data.
	for _, a := range console.Assets() {
		f := apidocs.NewFile(a.Path, a.ContentType, a.Body, apidocs.Revalidate, console.CSP, true)
		h := serveDocFile(f)
		rt.handle(http.MethodGet, a.Path, "GET "+a.Path, func(http.ResponseWriter, *http.Request, httprouter.Params) (answer, error) {
			return answer{serve: h}, nil
		})
	}
	return s.build(admin, rt)
}

// adminHandler is an admin API operation, run once the admin token is checked.
type adminHandler func(r *http.Request, p httprouter.Params) (answer, error)

// adminRoute registers h behind the admin token: "Authorization: Bearer
// <admin token>", compared in constant time. Without a configured token the
// admin API stays closed.
func (s *Server) adminRoute(rt *routes, method, path string, h adminHandler) {
	rt.handle(method, path, method+" "+path, func(_ http.ResponseWriter, r *http.Request, p httprouter.Params) (answer, error) {
		if s.adminToken == "" {
			return answer{}, &Error{Code: "admin_disabled", Detail: "No admin token is configured (GATEWAY_ADMIN_TOKEN)."}
		}
		tok, ok := bearer(r.Header.Get("Authorization"))
		if !ok || !tokenEqual(tok, s.adminToken) {
			return answer{}, &Error{Code: "unauthorized_admin", Detail: "Send Authorization: Bearer <admin token>."}
		}
		return h(r, p)
	})
}

func (s *Server) adminCreateKey(r *http.Request, _ httprouter.Params) (answer, error) {
	m, err := readJSONBody(r, []string{"companyId", "mode", "scopes", "name"})
	if err != nil {
		return answer{}, err
	}
	var fe []FieldError
	company, _ := stringMember(m, "companyId", &fe)
	modeS, _ := stringMember(m, "mode", &fe)
	name, _ := stringMember(m, "name", &fe)
	mode, err := invoicing.ParseMode(modeS)
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
		return answer{}, &Error{Code: "invalid_body", Detail: "The key request is invalid.", Fields: fe}
	}
	v, err := s.CreateKey(r.Context(), company, mode, scopes, name)
	if err != nil {
		return answer{}, err
	}
	return answer{status: http.StatusCreated, body: v, location: "/admin/v1/keys/" + v.ID}, nil
}

func (s *Server) adminListKeys(r *http.Request, _ httprouter.Params) (answer, error) {
	company := r.URL.Query().Get("companyId")
	if company == "" {
		return answer{}, &Error{Code: "invalid_parameter", Detail: "companyId is required.", Fields: []FieldError{{"companyId", "is required"}}}
	}
	keys, err := s.ListKeys(r.Context(), company)
	if err != nil {
		return answer{}, err
	}
	return answer{body: map[string]any{"data": keys}}, nil
}

func (s *Server) adminGetKey(r *http.Request, p httprouter.Params) (answer, error) {
	k, err := s.keys.Get(r.Context(), p.ByName("id"))
	if err != nil {
		return answer{}, err
	}
	return answer{body: ViewKey(k)}, nil
}

func (s *Server) adminRevokeKey(r *http.Request, p httprouter.Params) (answer, error) {
	return result(s.RevokeKey(r.Context(), p.ByName("id")))
}

func (s *Server) adminGetLimits(r *http.Request, p httprouter.Params) (answer, error) {
	return result(s.CompanyLimits(r.Context(), p.ByName("id")))
}

func (s *Server) adminSetLimits(r *http.Request, p httprouter.Params) (answer, error) {
	m, err := readJSONBody(r, []string{"mode", "rate", "burst"})
	if err != nil {
		return answer{}, err
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
		return answer{}, &Error{Code: "invalid_body", Detail: "The limit is invalid.", Fields: fe}
	}
	return result(s.SetCompanyLimit(r.Context(), p.ByName("id"), mode, rate, burst))
}

func (s *Server) adminResetLimits(r *http.Request, p httprouter.Params) (answer, error) {
	return result(s.ResetCompanyLimits(r.Context(), p.ByName("id")))
}

// result answers v with 200, or err.
func result[T any](v T, err error) (answer, error) {
	if err != nil {
		return answer{}, err
	}
	return answer{body: v}, nil
}
