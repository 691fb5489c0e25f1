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
	Keys    Keys    // required
	Limiter Limiter // required
	// Usage reads each company's request counts; nil means usage is not
	// counted (the usage and traffic endpoints answer 503).
	Usage Usage
	// Shape reads each company's recorded traffic, per second; nil means it
	// is not recorded (what-if and shape queries answer 503).
	Shape Shape
	// Audit records every change of keys and limits; nil records nothing
	// (and the audit endpoint answers 503).
	Audit AuditLog
	// Webhooks manages webhook endpoints; nil means webhooks are not
	// configured (their endpoints answer 503 events_unavailable).
	Webhooks Webhooks
	// Companies is the live database, which knows the platform's companies;
	// nil (the command line's Redis-only commands) means company ids are
	// checked for their form only.
	Companies Companies
	// Directory finds companies by name or NIF for the console (the live
	// database, like Companies); nil means GET /admin/v1/companies answers
	// 503 database_unavailable.
	Directory Directory
	// Token protects the admin API; empty disables it (every admin call
	// answers 503), so a forgotten setting never leaves it open. The binary
	// accepts only a strong one (CheckToken).
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

// Service administers keys, limits, usage and the audit log, for the admin
// API and the command line alike.
type Service struct {
	keys       Keys
	limiter    Limiter
	usage      Usage
	shape      Shape
	audit      AuditLog
	companies  Companies
	directory  Directory
	webhooks   Webhooks
	adminToken string
	failures   *failures
	expensive  *gate
	logger     *slog.Logger
	now        func() time.Time
}

// New builds a Service from cfg.
func New(cfg Config) *Service {
	s := &Service{keys: cfg.Keys, limiter: cfg.Limiter, usage: cfg.Usage, shape: cfg.Shape, audit: cfg.Audit, companies: cfg.Companies, directory: cfg.Directory, webhooks: cfg.Webhooks,
		adminToken: cfg.Token, logger: cfg.Logger, now: cfg.Now, failures: newFailures(cfg.TokenFailures),
		expensive: newGate(cfg.ExpensiveReads, cfg.ExpensiveWait)}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Routes registers the admin API, the console and the runtime profiles,
// behind the admin token, on the admin listener's router (the binary
// assembles the listener: cmd/gateway). They are never mounted on the
// public listener.
func (s *Service) Routes(rt *web.Router) {
	s.adminRoute(rt, http.MethodPost, "/admin/v1/keys", s.adminCreateKey)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/keys", s.adminListKeys)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/keys/:id", s.adminGetKey)
	s.adminRoute(rt, http.MethodDelete, "/admin/v1/keys/:id", s.adminRevokeKey)
	s.adminRoute(rt, http.MethodPost, "/admin/v1/keys/:id/roll", s.adminRollKey)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies", s.adminCompanies)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/limits", s.adminGetLimits)
	s.adminRoute(rt, http.MethodPut, "/admin/v1/companies/:id/limits", s.adminSetLimits)
	s.adminRoute(rt, http.MethodDelete, "/admin/v1/companies/:id/limits", s.adminResetLimits)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/limits/whatif", s.adminWhatIf)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/limits/shape", s.adminShape)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/limits/headroom", s.adminHeadroom)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/usage", s.adminUsage)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/usage/minutes", s.adminMinutes)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/overview", s.adminOverview)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/audit", s.adminAudit)
	s.adminRoute(rt, http.MethodPost, "/admin/v1/companies/:id/webhooks", s.adminCreateWebhook)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/companies/:id/webhooks", s.adminListWebhooks)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/webhooks/:id", s.adminGetWebhook)
	s.adminRoute(rt, http.MethodPatch, "/admin/v1/webhooks/:id", s.adminUpdateWebhook)
	s.adminRoute(rt, http.MethodDelete, "/admin/v1/webhooks/:id", s.adminDeleteWebhook)
	s.adminRoute(rt, http.MethodPost, "/admin/v1/webhooks/:id/rotate-secret", s.adminRotateWebhookSecret)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/webhooks/:id/deliveries", s.adminWebhookDeliveries)
	s.adminRoute(rt, http.MethodGet, "/admin/v1/webhooks/:id/stats", s.adminWebhookStats)
	s.adminRoute(rt, http.MethodPost, "/admin/v1/webhooks/:id/deliveries/:event/replay", s.adminReplayWebhook)
	s.adminRoute(rt, http.MethodPost, "/admin/v1/webhooks/:id/recover", s.adminRecoverWebhook)
	s.adminRoute(rt, http.MethodPost, "/admin/v1/webhooks/:id/test", s.adminTestWebhook)
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

// Companies knows the platform's companies (backend.Store, the live
// database).
type Companies interface {
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
func (s *Service) knownCompany(ctx context.Context, id string) (string, error) {
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
