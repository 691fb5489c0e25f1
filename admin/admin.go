package admin

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/invoicing-ao/gateway/admin/console"
	"github.com/invoicing-ao/gateway/gateway/apidocs"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// Config holds the administration's dependencies.
type Config struct {
	Keys    Keyring // required
	Limiter Limiter // required
	// Usage reads each company's request counts; nil means usage is not
	// counted (the usage and traffic endpoints answer 503).
	Usage UsageCounter
	// Shape reads each company's recorded traffic, per second; nil means it
	// is not recorded (what-if and shape queries answer 503).
	Shape ShapeStore
	// Audit records every change of keys and limits; nil records nothing
	// (and the audit endpoint answers 503).
	Audit AuditLog
	// Webhooks manages webhook endpoints; nil means webhooks are not
	// configured (their endpoints answer 503 events_unavailable).
	Webhooks Events
	// Companies is the live database, which knows the platform's companies;
	// nil (the command line's Redis-only commands) means company ids are
	// checked for their form only.
	Companies Platform
	// Directory finds companies by name or NIF for the console (the live
	// database, like Companies); nil means GET /admin/v1/companies answers
	// 503 database_unavailable.
	Directory Directory
	// Token protects the admin API; empty disables it (every admin call
	// answers 503), so a forgotten setting never leaves it open. The binary
	// accepts only a strong one (invoicing.CheckToken).
	Token string
	// TokenFailures bounds the wrong tokens each source address may present
	// (throttle.go): a rate per second after a burst; zero means
	// FailureRate after FailureBurst, a negative Rate no bound.
	TokenFailures Limit
	// ExpensiveReads is how many what-if and traffic shape reads run at
	// once (expensive.go); zero means half the CPUs, at least one.
	ExpensiveReads int
	// ExpensiveWait is how long such a read waits for its turn before it is
	// answered 503 admin_busy; zero means 5s.
	ExpensiveWait time.Duration
	Logger        *slog.Logger     // nil means slog.Default()
	Now           func() time.Time // nil means time.Now
}

// Service is the administration, one room per resource, each with the
// operations the admin API and the command line share: the CLI calls
// them (svc.Keys.CreateKey, svc.Limits.WhatIf, ...), the admin API's
// handlers read a request and call the same. Service itself guards the
// admin listener: the token, its throttle, the routes of every room
// (Routes) and the runtime profiles.
type Service struct {
	Keys       *Keys       // create, roll, revoke and list API keys
	Limits     *Limits     // each company's limits, and what a limit would have refused
	Webhooks   *Webhooks   // webhook endpoints
	Deliveries *Deliveries // an endpoint's delivery log, and deliveries sent again
	Audit      *Audit      // a company's audit log
	Usage      *Usage      // request counts and traffic, per company and overall
	Companies  *Companies  // the platform's companies by name or NIF

	adminToken string
	failures   *failures
	logger     *slog.Logger
	now        func() time.Time
}

// base is what every room shares: the clock, the log, the check that a
// company exists, and the audit record of each change (audit.go).
type base struct {
	now       func() time.Time
	logger    *slog.Logger
	companies Platform
	audit     AuditLog // nil records nothing
}

// New builds a Service from cfg.
func New(cfg Config) *Service {
	b := &base{now: cfg.Now, logger: cfg.Logger, companies: cfg.Companies, audit: cfg.Audit}
	if b.logger == nil {
		b.logger = slog.Default()
	}
	if b.now == nil {
		b.now = time.Now
	}
	limits := &Limits{base: b, limiter: cfg.Limiter, shape: cfg.Shape, expensive: newGate(cfg.ExpensiveReads, cfg.ExpensiveWait)}
	s := &Service{
		Keys:       &Keys{base: b, keys: cfg.Keys},
		Limits:     limits,
		Webhooks:   &Webhooks{base: b, webhooks: cfg.Webhooks},
		Deliveries: &Deliveries{base: b, webhooks: cfg.Webhooks},
		Audit:      &Audit{base: b, log: cfg.Audit, keys: cfg.Keys},
		Usage:      &Usage{base: b, usage: cfg.Usage, limits: limits},
		Companies:  &Companies{directory: cfg.Directory},
		adminToken: cfg.Token, failures: newFailures(cfg.TokenFailures), logger: b.logger, now: b.now,
	}
	return s
}

// Routes registers the admin API, the console and the runtime profiles,
// behind the admin token, on the admin listener's router (the binary
// assembles the listener: cmd/gateway). They are never mounted on the
// public listener. Every route of every room is here, in one list.
func (s *Service) Routes(rt *web.Router) {
	k, l, w, d := s.Keys, s.Limits, s.Webhooks, s.Deliveries
	s.adminRoute(rt, http.MethodPost, "/admin/v1/keys", k.adminCreateKey)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/keys", k.adminListKeys)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/keys/:id", k.adminGetKey)
	s.adminRoute(rt, http.MethodDelete, "/admin/v1/keys/:id", k.adminRevokeKey)
	s.adminRoute(rt, http.MethodPost, "/admin/v1/keys/:id/roll", k.adminRollKey)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies", s.Companies.adminCompanies)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/limits", l.adminGetLimits)
	s.adminRoute(rt, http.MethodPut, "/admin/v1/companies/:id/limits", l.adminSetLimits)
	s.adminRoute(rt, http.MethodDelete, "/admin/v1/companies/:id/limits", l.adminResetLimits)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/limits/whatif", l.adminWhatIf)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/limits/shape", l.adminShape)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/limits/headroom", l.adminHeadroom)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/usage", s.Usage.adminUsage)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/usage/minutes", s.Usage.adminMinutes)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/overview", s.Usage.adminOverview)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/audit", s.Audit.adminAudit)
	s.adminRoute(rt, http.MethodPost, "/admin/v1/companies/:id/webhooks", w.adminCreateWebhook)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/webhooks", w.adminListWebhooks)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/webhooks/:id", w.adminGetWebhook)
	s.adminRoute(rt, http.MethodPatch, "/admin/v1/webhooks/:id", w.adminUpdateWebhook)
	s.adminRoute(rt, http.MethodDelete, "/admin/v1/webhooks/:id", w.adminDeleteWebhook)
	s.adminRoute(rt, http.MethodPost, "/admin/v1/webhooks/:id/rotate-secret", w.adminRotateWebhookSecret)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/webhooks/:id/deliveries", d.adminWebhookDeliveries)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/webhooks/:id/stats", d.adminWebhookStats)
	s.adminRoute(rt, http.MethodPost, "/admin/v1/webhooks/:id/deliveries/:event/replay", d.adminReplayWebhook)
	s.adminRoute(rt, http.MethodPost, "/admin/v1/webhooks/:id/recover", d.adminRecoverWebhook)
	s.adminRoute(rt, http.MethodPost, "/admin/v1/webhooks/:id/test", d.adminTestWebhook)
	s.adminRoute(rt, http.MethodGet, "/debug/pprof/*name", s.adminPprof)
	// The console is an app that asks for the token itself; its files hold
	// no data.
	for _, a := range console.Assets() {
		h := apidocs.NewFile(a.Path, a.ContentType, a.Body, apidocs.Revalidate, console.CSP, true) // served as the portal's files are
		rt.Handle(http.MethodGet, a.Path, func(*http.Request, web.Params) (web.Answer, error) {
			return web.Answer{Serve: h}, nil
		})
	}
	// A browser pointed at the admin address, or at the console with a
	// trailing slash, is sent to the console rather than shown a JSON 404.
	toConsole := http.RedirectHandler(console.Path, http.StatusFound)
	for _, path := range []string{"/", console.Path + "/"} {
		rt.Handle(http.MethodGet, path, func(*http.Request, web.Params) (web.Answer, error) {
			return web.Answer{Serve: toConsole}, nil
		})
	}
}

// adminRoute registers h behind the admin token: "Authorization: Bearer
// <admin token>", compared in constant time. Without a configured token the
// admin API stays closed. Every change (any method but GET) also needs
// X-Actor, the dashboard user it is made for: the audit log names them.
func (s *Service) adminRoute(rt *web.Router, method, path string, h web.RouteFunc) {
	rt.Handle(method, path, func(r *http.Request, p web.Params) (web.Answer, error) {
		if err := s.authorize(r); err != nil {
			return web.Answer{}, err
		}
		if method != http.MethodGet {
			if len(r.Header.Values("X-Actor")) > 1 {
				return web.Answer{}, &web.Error{Code: "invalid_actor", Detail: "Send X-Actor once: the name of the person this change is made for.",
					Fields: []web.FieldError{{Field: "X-Actor", Message: "is given more than once"}}}
			}
			if err := checkActor(actor(r)); err != nil {
				return web.Answer{}, err
			}
		}
		return h(r, p)
	})
}

// authorize checks r's admin token, throttling wrong ones per source
// (throttle.go). A request without one guesses nothing: it is refused
// without counting.
func (s *Service) authorize(r *http.Request) error {
	if s.adminToken == "" {
		return &web.Error{Code: "admin_disabled", Detail: "No admin token is configured (GATEWAY_ADMIN_TOKEN)."}
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return &web.Error{Code: "unauthorized_admin", Detail: "Send Authorization: Bearer <admin token>."}
	}
	src := peer(r)
	done, wait, starts := s.failures.take(src, s.now())
	if done == nil {
		if starts {
			s.logger.Warn("admin: wrong admin tokens throttled", "source", src.String(), "retryAfter", wait.Round(time.Millisecond).String())
		}
		return &web.Error{Code: "admin_token_throttled", RetryAfter: wait,
			Detail: "Too many wrong admin tokens came from this address: retry with the right one after the Retry-After delay."}
	}
	tok, ok := web.Bearer(h)
	right := ok && tokenEqual(tok, s.adminToken)
	done(right)
	switch {
	case !ok:
		s.logger.Warn("admin: wrong admin token", "source", src.String())
		return &web.Error{Code: "invalid_admin_token", Detail: "The Authorization header is not of the form Bearer <admin token>."}
	case !right:
		s.logger.Warn("admin: wrong admin token", "source", src.String())
		return &web.Error{Code: "invalid_admin_token", Detail: "The admin token sent is not this gateway's (GATEWAY_ADMIN_TOKEN); check it and send it again."}
	}
	return nil
}

// peer is the address of r's connection (the zero Addr when it is not
// one: all such requests share one source).
func peer(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr()
}

// actor is who an admin API change is made for (checked by adminRoute).
func actor(r *http.Request) string { return r.Header.Get("X-Actor") }

// fieldError is err, an input refused, as one of a body's errors: its
// invoicing.FieldError's message, in the caller's words.
func fieldError(field string, err error) web.FieldError {
	var fe *invoicing.FieldError
	if errors.As(err, &fe) {
		return web.FieldError{Field: fe.Field, Message: fe.Message}
	}
	return web.FieldError{Field: field, Message: err.Error()}
}

// result answers v with 200, or err.
func result[T any](v T, err error) (web.Answer, error) {
	if err != nil {
		return web.Answer{}, err
	}
	return web.Answer{Body: v}, nil
}

// Platform knows the platform's companies (backend.Store, the live
// database).
type Platform interface {
	Company(ctx context.Context, id string) (invoicing.Company, error)
}

// parseCompany reads a company id given to the admin API or the command line.
func parseCompany(id string) (string, error) {
	c, err := invoicing.ParseCompanyID(id)
	if err != nil {
		return "", &web.Error{Code: "unknown_company", Detail: "No company " + invoicing.Clip(id) + " exists on the platform: a company id is a UUID.", Err: err}
	}
	return c, nil
}

// knownCompany reads a company id and checks that the platform knows it, so
// that a mistyped id is said to be one instead of reading as a company
// without keys or requests. Without Companies (the command line's
// Redis-only commands) it checks the id's form only.
func (s *base) knownCompany(ctx context.Context, id string) (string, error) {
	c, err := parseCompany(id)
	if err != nil || s.companies == nil {
		return c, err
	}
	if _, err := s.companies.Company(ctx, c); err != nil {
		if invoicing.KindOf(err) == invoicing.NotFound {
			return "", &web.Error{Code: "unknown_company", Detail: "No company " + c + " exists on the platform.", Err: err}
		}
		return "", err
	}
	return c, nil
}
