package gateway

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/web"
)

// Keys verifies the API keys requests bring, and answers readiness for the
// store that keeps them (authz.Keyring). Managing keys is the admin
// package's. The source is the request's client address (web.State.Addr),
// which bounds the lookups of keys the store does not know.
type Keys interface {
	VerifyFrom(ctx context.Context, secret string, src authz.Source) (authz.Key, error)
	Ping(ctx context.Context) error
}

// Limiter decides admission under each company's rate limit
// (tenants.Limiter). Reading and setting the limits is the admin package's.
type Limiter interface {
	Allow(ctx context.Context, companyID string, mode invoicing.Mode) (tenants.Decision, error)
}

// Usage counts each company's requests (usage.Counter). Reading the counts
// is the admin package's.
type Usage interface {
	Add(companyID string, mode invoicing.Mode, status int)
}

// Guard caps requests in flight to the database (tenants.Guard).
type Guard interface {
	Acquire(ctx context.Context, companyID string) (tenants.Slot, error)
}

// Config holds the server's dependencies.
type Config struct {
	// Live and Test are the live and the sandbox database; required to
	// serve.
	Live, Test Store
	Keys       Keys    // required
	Limiter    Limiter // required
	Guard      Guard   // nil means no cap on requests in flight
	// CompanyTTL is how long a company's status (active, suspended) is
	// remembered; zero means 5s.
	CompanyTTL time.Duration
	Logger     *slog.Logger     // nil means slog.Default()
	Now        func() time.Time // nil means time.Now

	// CORSAllowedOrigins are the other origins whose browser code may call
	// the API (canonical, see ParseOrigins); empty means none, and the API
	// explorer, served from the API's own origin, needs none.
	CORSAllowedOrigins []string

	// TracerProvider makes the request spans; nil means otel's global one.
	TracerProvider trace.TracerProvider
	// Usage counts each company's requests; nil counts nothing.
	Usage Usage
	// Idempotency stores the final answers of creates sent with an
	// Idempotency-Key; nil stores none: retries are still never a second
	// client (the database refuses the derived id), but are answered from
	// the client as it is now, and a retry while the first attempt runs is
	// not told so.
	Idempotency Idempotency
	// CursorSecret keys the lists' cursors, so that none can be forged; every
	// instance must have the same. Empty means CursorKeys's.
	CursorSecret string
	// CursorKeys gives the deployment's own cursor keys when CursorSecret is
	// empty (cmd/gateway keeps one in Redis, made once and shared by every
	// instance). Nil, with CursorSecret empty, means a random key of this
	// process: cursors as unforgeable, but taken by this instance only,
	// until it stops.
	CursorKeys CursorKeys
	// TrustedProxies are the networks of the proxies in front of the
	// gateway whose X-Forwarded-For is believed (see clientAddr); empty
	// means none: the client is the connection's peer.
	TrustedProxies []netip.Prefix
	// RedisDurability is what /readyz says of what Redis allows (its
	// persistence, eviction policy, replicas), as "redisDurability"; nil
	// says nothing.
	RedisDurability func() any
	// HistoryDatabase asks the gateway's own database (the audit log's and
	// the events' history's) whether it can be used, for /readyz's
	// "historyDatabase"; nil reports none.
	HistoryDatabase func(ctx context.Context) error
	// Feed serves GET /events, the events feed; nil answers it 404
	// route_not_found (a gateway run without events).
	Feed Feed
	// Metrics registers the public listener's metrics (its requests and
	// latencies, the rate limit's decisions) on the registry the admin
	// listener serves on /metrics; nil registers them nowhere.
	Metrics prometheus.Registerer
}

// Server holds the dependencies of the handlers.
type Server struct {
	live, test Store
	keys       Keys
	limiter    Limiter
	guard      Guard
	companies  *companyCache
	web        web.Config // the public listener's chain
	metrics    *metrics
	idem       Idempotency
	cursorKey  cursorKeyring // CursorSecret's, or this process's own
	sharedKeys CursorKeys    // Config.CursorKeys, when CursorSecret is empty
	draining   atomic.Bool
	durability func() any // Config.RedisDurability
	history    func(ctx context.Context) error
	feed       Feed
	logger     *slog.Logger
	now        func() time.Time
}

// answers is how the public listener writes: the resources' fast
// encoders (encode.go), the API's paths in problems, its Bearer realm.
var answers = web.Answers{APIPrefix: apiPrefix, Realm: "invoicing-api", Encoder: resourceEncoder{}}

// New builds a Server from cfg.
func New(cfg Config) *Server {
	s := &Server{
		live: cfg.Live, test: cfg.Test, keys: cfg.Keys, limiter: cfg.Limiter, guard: cfg.Guard,
		logger: cfg.Logger, now: cfg.Now, durability: cfg.RedisDurability, feed: cfg.Feed, history: cfg.HistoryDatabase,
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	ttl := cfg.CompanyTTL
	if ttl <= 0 {
		ttl = 5 * time.Second
	}
	s.companies = newCompanyCache(ttl, s.now)
	s.idem = cfg.Idempotency
	switch {
	case cfg.CursorSecret != "":
		s.cursorKey = cursorKeyring{[]byte(cfg.CursorSecret)}
	case cfg.CursorKeys != nil:
		s.sharedKeys = cfg.CursorKeys
	default:
		own := make([]byte, 32)
		_, _ = rand.Read(own) // never fails (crypto/rand)
		s.cursorKey = cursorKeyring{own}
	}
	s.metrics = newMetrics(cfg.Metrics)
	s.web = web.Config{
		Logger: s.logger, Now: s.now,
		Telemetry: &web.Telemetry{TracerProvider: cfg.TracerProvider, Metrics: web.NewMetrics(cfg.Metrics),
			Usage: cfg.Usage, Attributes: s.spanAttributes},
		CORSAllowedOrigins: cfg.CORSAllowedOrigins, TrustedProxies: cfg.TrustedProxies,
		RouteNotFound: routeHint, Answers: answers,
	}
	return s
}

// breakerStater is a store with a circuit breaker (backend.Store); test
// doubles need not have one.
type breakerStater interface{ BreakerState() string }

// spanAttributes adds to a request's span the state of its database's
// breaker, when the store has one.
func (s *Server) spanAttributes(c web.Caller, attrs []attribute.KeyValue) []attribute.KeyValue {
	if b, ok := s.store(c.Mode).(breakerStater); ok {
		attrs = append(attrs, attribute.String("db.breaker.state", b.BreakerState()))
	}
	return attrs
}

// store picks the database of the key's mode: LIVE keys never reach the
// sandbox and TEST keys never reach live data.
func (s *Server) store(m invoicing.Mode) Store {
	if m == invoicing.Live {
		return s.live
	}
	return s.test
}
