package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

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
	s.adminRoute(rt, http.MethodPost, "/admin/v1/keys/:id/roll", s.adminRollKey)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/limits", s.adminGetLimits)
	s.adminRoute(rt, http.MethodPut, "/admin/v1/companies/:id/limits", s.adminSetLimits)
	s.adminRoute(rt, http.MethodDelete, "/admin/v1/companies/:id/limits", s.adminResetLimits)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/usage", s.adminUsage)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/usage/minutes", s.adminMinutes)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/overview", s.adminOverview)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/audit", s.adminAudit)
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
// admin API stays closed. Every change (any method but GET) also needs
// X-Actor, the dashboard user it is made for: the audit log names them.
func (s *Server) adminRoute(rt *routes, method, path string, h adminHandler) {
	rt.handle(method, path, method+" "+path, func(_ http.ResponseWriter, r *http.Request, p httprouter.Params) (answer, error) {
		if s.adminToken == "" {
			return answer{}, &Error{Code: "admin_disabled", Detail: "No admin token is configured (GATEWAY_ADMIN_TOKEN)."}
		}
		tok, ok := bearer(r.Header.Get("Authorization"))
		if !ok || !tokenEqual(tok, s.adminToken) {
			return answer{}, &Error{Code: "unauthorized_admin", Detail: "Send Authorization: Bearer <admin token>."}
		}
		if method != http.MethodGet {
			if len(r.Header.Values("X-Actor")) > 1 {
				return answer{}, &Error{Code: "invalid_parameter", Detail: "Send X-Actor once.", Fields: []FieldError{{"X-Actor", "is given more than once"}}}
			}
			if err := checkActor(actor(r)); err != nil {
				return answer{}, err
			}
		}
		return h(r, p)
	})
}

// actor is who an admin API change is made for (checked by adminRoute).
func actor(r *http.Request) string { return r.Header.Get("X-Actor") }

func (s *Server) adminCreateKey(r *http.Request, _ httprouter.Params) (answer, error) {
	m, err := readJSONBody(r, []string{"companyId", "mode", "scopes", "name", "expiresAt", "allowedCidrs"})
	if err != nil {
		return answer{}, err
	}
	var fe []FieldError
	var spec KeySpec
	spec.CompanyID, _ = stringMember(m, "companyId", &fe)
	modeS, _ := stringMember(m, "mode", &fe)
	spec.Name, _ = stringMember(m, "name", &fe)
	if spec.Mode, err = invoicing.ParseMode(modeS); err != nil {
		fe = append(fe, FieldError{"mode", "must be LIVE or TEST"})
	}
	var scopeList []string
	if raw, ok := m["scopes"]; !ok || json.Unmarshal(raw, &scopeList) != nil {
		fe = append(fe, FieldError{"scopes", "must be an array of scopes"})
	} else if spec.Scopes, err = authz.ParseScopes(strings.Join(scopeList, ",")); err != nil {
		fe = append(fe, FieldError{"scopes", err.Error()})
	}
	if spec.CompanyID == "" {
		fe = append(fe, FieldError{"companyId", "is required"})
	}
	if v, ok := stringMember(m, "expiresAt", &fe); ok {
		if t, err := time.Parse(time.RFC3339Nano, v); err != nil {
			fe = append(fe, FieldError{"expiresAt", "must be an RFC 3339 time such as 2027-01-31T00:00:00Z"})
		} else if !t.After(s.now()) {
			fe = append(fe, FieldError{"expiresAt", "must be in the future"})
		} else {
			spec.ExpiresAt = &t
		}
	}
	if raw, ok := m["allowedCidrs"]; ok && string(raw) != "null" && json.Unmarshal(raw, &spec.AllowedCIDRs) != nil {
		fe = append(fe, FieldError{"allowedCidrs", "must be an array of CIDRs such as 203.0.113.0/24"})
	}
	if len(fe) > 0 {
		return answer{}, &Error{Code: "invalid_body", Detail: "The key request is invalid.", Fields: fe}
	}
	v, err := s.CreateKey(r.Context(), actor(r), spec)
	if err != nil {
		return answer{}, err
	}
	return answer{status: http.StatusCreated, body: v, location: "/admin/v1/keys/" + v.ID}, nil
}

// adminRollKey rolls a key: {"overlapSeconds": N}, or no body for the
// default overlap.
func (s *Server) adminRollKey(r *http.Request, p httprouter.Params) (answer, error) {
	overlap := authz.DefaultOverlap
	if r.ContentLength != 0 {
		m, err := readJSONBody(r, []string{"overlapSeconds"})
		if err != nil {
			return answer{}, err
		}
		most := int64(authz.MaxOverlap / time.Second)
		if raw, ok := m["overlapSeconds"]; ok {
			n, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil || n < 0 || n > most {
				msg := "must be an integer from 0 to " + strconv.FormatInt(most, 10)
				return answer{}, &Error{Code: "invalid_body", Detail: "overlapSeconds " + msg + ".", Fields: []FieldError{{"overlapSeconds", msg}}}
			}
			overlap = time.Duration(n) * time.Second
		}
	}
	v, err := s.RollKey(r.Context(), actor(r), p.ByName("id"), overlap)
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
	return answer{body: s.viewKey(k)}, nil
}

func (s *Server) adminRevokeKey(r *http.Request, p httprouter.Params) (answer, error) {
	return result(s.RevokeKey(r.Context(), actor(r), p.ByName("id")))
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
	return result(s.SetCompanyLimit(r.Context(), actor(r), p.ByName("id"), mode, rate, burst))
}

func (s *Server) adminResetLimits(r *http.Request, p httprouter.Params) (answer, error) {
	return result(s.ResetCompanyLimits(r.Context(), actor(r), p.ByName("id")))
}

// result answers v with 200, or err.
func result[T any](v T, err error) (answer, error) {
	if err != nil {
		return answer{}, err
	}
	return answer{body: v}, nil
}
