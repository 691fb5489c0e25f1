package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/invoicing-ao/gateway/gateway"
	"github.com/invoicing-ao/gateway/tenants"
)

// Config is the gateway's configuration: defaults, then the YAML file, then
// the environment (each field's env tag), the later winning. Every field has
// both a YAML key and an environment variable, and errors name both.
type Config struct {
	Addr       string `yaml:"addr" env:"GATEWAY_ADDR"`              // public listener
	AdminAddr  string `yaml:"adminAddr" env:"GATEWAY_ADMIN_ADDR"`   // internal listener: admin API
	AdminToken string `yaml:"adminToken" env:"GATEWAY_ADMIN_TOKEN"` // empty disables the admin API; else strong (adminconfig.go)
	// AdminHosts is a comma-separated list of the host names the admin
	// listener answers to besides its IP addresses and loopback names;
	// empty means none (adminconfig.go).
	AdminHosts string `yaml:"adminHosts" env:"GATEWAY_ADMIN_HOSTS"`
	// CursorSecret keys the lists' cursors (the same on every instance);
	// empty means a built-in key (gateway.Config.CursorSecret).
	CursorSecret string `yaml:"cursorSecret" env:"GATEWAY_CURSOR_SECRET"`

	RedisURL        string `yaml:"redisURL" env:"GATEWAY_REDIS_URL"`
	RedisPrefix     string `yaml:"redisPrefix" env:"GATEWAY_REDIS_PREFIX"` // prepended to every Redis key (environments sharing a Redis)
	LiveDatabaseURL string `yaml:"liveDatabaseURL" env:"GATEWAY_LIVE_DATABASE_URL"`
	TestDatabaseURL string `yaml:"testDatabaseURL" env:"GATEWAY_TEST_DATABASE_URL"`

	// RedisMinReplicas is how many Redis replicas must acknowledge each
	// write of a change of the control plane (keys, limits, webhook
	// endpoints, audit events) before it is reported done: "auto" (unset,
	// or empty) one when Redis is replicated and none when it is not, an
	// integer that number, and "0" none at all, named at start as an
	// opt-out (redisguard.go). RedisReplicaTimeout bounds each wait for
	// them, zero meaning 1s (internal/durable). RedisAllowEviction lets
	// serve start on a Redis whose maxmemory-policy may evict the control
	// plane's records.
	RedisMinReplicas    string        `yaml:"redisMinReplicas" env:"GATEWAY_REDIS_MIN_REPLICAS"`
	RedisReplicaTimeout time.Duration `yaml:"redisReplicaTimeout" env:"GATEWAY_REDIS_REPLICA_TIMEOUT"`
	RedisAllowEviction  bool          `yaml:"redisAllowEviction" env:"GATEWAY_REDIS_ALLOW_EVICTION"`

	// Optional read replicas of the two databases, same engine; empty means
	// none. Reads go to them, with read-your-writes for created clients for
	// ReadYourWritesWindow, zero meaning 5s (backend/replica.go); checked
	// in replicas.go.
	LiveReplicaURL       string        `yaml:"liveReplicaURL" env:"GATEWAY_LIVE_REPLICA_URL"`
	TestReplicaURL       string        `yaml:"testReplicaURL" env:"GATEWAY_TEST_REPLICA_URL"`
	ReadYourWritesWindow time.Duration `yaml:"readYourWritesWindow" env:"GATEWAY_READ_YOUR_WRITES_WINDOW"`

	DatabaseMaxConns int           `yaml:"databaseMaxConns" env:"GATEWAY_DATABASE_MAX_CONNS"`
	QueryTimeout     time.Duration `yaml:"queryTimeout" env:"GATEWAY_QUERY_TIMEOUT"`
	// BreakerFailures consecutive failed calls open a database's circuit
	// breaker, which then refuses calls until its next probe: 250ms after
	// opening, the wait doubling with each failed probe up to BreakerOpenFor
	// (backend/breaker.go).
	BreakerFailures int           `yaml:"breakerFailures" env:"GATEWAY_BREAKER_FAILURES"`
	BreakerOpenFor  time.Duration `yaml:"breakerOpenFor" env:"GATEWAY_BREAKER_OPEN_FOR"`

	LiveRate  float64 `yaml:"liveRate" env:"GATEWAY_LIVE_RATE"` // default requests/s per company
	LiveBurst int     `yaml:"liveBurst" env:"GATEWAY_LIVE_BURST"`
	TestRate  float64 `yaml:"testRate" env:"GATEWAY_TEST_RATE"`
	TestBurst int     `yaml:"testBurst" env:"GATEWAY_TEST_BURST"`

	InflightPerCompany int `yaml:"inflightPerCompany" env:"GATEWAY_INFLIGHT_PER_COMPANY"`
	InflightTotal      int `yaml:"inflightTotal" env:"GATEWAY_INFLIGHT_TOTAL"`

	KeyCacheTTL time.Duration `yaml:"keyCacheTTL" env:"GATEWAY_KEY_CACHE_TTL"`
	KeyStaleTTL time.Duration `yaml:"keyStaleTTL" env:"GATEWAY_KEY_STALE_TTL"`
	// KeyRefuseLegacyForm refuses keys of the first form (no checksum)
	// without a lookup: the last step of phasing them out (operators.md).
	KeyRefuseLegacyForm bool `yaml:"keyRefuseLegacyForm" env:"GATEWAY_KEY_REFUSE_LEGACY_FORM"`

	// CORSAllowedOrigins is a comma-separated list of other origins whose
	// browser code may call the API; empty means none.
	CORSAllowedOrigins string `yaml:"corsAllowedOrigins" env:"GATEWAY_CORS_ALLOWED_ORIGINS"`

	// TrustedProxies is a comma-separated list of the CIDRs of the proxies
	// in front of the gateway, whose X-Forwarded-For names the client (for
	// keys limited to some networks); empty means none: the client is the
	// connection's peer.
	TrustedProxies string `yaml:"trustedProxies" env:"GATEWAY_TRUSTED_PROXIES"`

	// DrainDelay is how long, on SIGTERM, the instance keeps serving with
	// readiness false before it stops accepting, so load balancers notice;
	// ShutdownTimeout then bounds the requests still in flight.
	DrainDelay time.Duration `yaml:"drainDelay" env:"GATEWAY_DRAIN_DELAY"`

	ShutdownTimeout time.Duration `yaml:"shutdownTimeout" env:"GATEWAY_SHUTDOWN_TIMEOUT"`
	LogLevel        string        `yaml:"logLevel" env:"GATEWAY_LOG_LEVEL"`

	// Events (webhooks; eventsconfig.go, docs/operators.md): whether this
	// instance detects changes and delivers events (the admin API manages
	// endpoints either way), where endpoints may point, and how deliveries go.
	EventsRun             bool          `yaml:"eventsRun" env:"GATEWAY_EVENTS_RUN"`
	EventsAllowHTTP       bool          `yaml:"eventsAllowHTTP" env:"GATEWAY_EVENTS_ALLOW_HTTP"`
	EventsAllowedNetworks string        `yaml:"eventsAllowedNetworks" env:"GATEWAY_EVENTS_ALLOWED_NETWORKS"`
	EventsTimeout         time.Duration `yaml:"eventsTimeout" env:"GATEWAY_EVENTS_TIMEOUT"`
	EventsConcurrency     int           `yaml:"eventsConcurrency" env:"GATEWAY_EVENTS_CONCURRENCY"`
	EventsRetention       time.Duration `yaml:"eventsRetention" env:"GATEWAY_EVENTS_RETENTION"`
	EventsRecovery        time.Duration `yaml:"eventsRecovery" env:"GATEWAY_EVENTS_RECOVERY"`
	EventsRemember        time.Duration `yaml:"eventsRemember" env:"GATEWAY_EVENTS_REMEMBER"`
	// EventsFeedWindow is how long the events feed (GET /events) keeps
	// every company's events; 0 means eventsRetention, negative turns the
	// feed off.
	EventsFeedWindow time.Duration `yaml:"eventsFeedWindow" env:"GATEWAY_EVENTS_FEED_WINDOW"`

	// Webhook signing secrets at rest (secretsconfig.go): sealed in Redis
	// with this age key; older keys still open what they sealed (key
	// rotation). Required where secrets are made or used, unless
	// WebhookSecretsPlaintext keeps them in plain text.
	WebhookSecretsKey       string `yaml:"webhookSecretsKey" env:"GATEWAY_WEBHOOK_SECRETS_KEY"`
	WebhookSecretsOldKeys   string `yaml:"webhookSecretsOldKeys" env:"GATEWAY_WEBHOOK_SECRETS_OLD_KEYS"`
	WebhookSecretsPlaintext bool   `yaml:"webhookSecretsPlaintext" env:"GATEWAY_WEBHOOK_SECRETS_PLAINTEXT"`
}

// defaultConfig is the configuration with nothing set.
func defaultConfig() Config {
	return Config{
		Addr:               ":8080",
		AdminAddr:          "127.0.0.1:8081",
		RedisURL:           "redis://127.0.0.1:6379/0",
		RedisMinReplicas:   autoReplicas,
		DatabaseMaxConns:   10,
		QueryTimeout:       2 * time.Second,
		BreakerFailures:    5,
		BreakerOpenFor:     5 * time.Second,
		LiveRate:           50,
		LiveBurst:          100,
		TestRate:           10,
		TestBurst:          20,
		InflightPerCompany: 8,
		InflightTotal:      64,
		KeyCacheTTL:        time.Second,
		KeyStaleTTL:        5 * time.Minute,
		ShutdownTimeout:    15 * time.Second,
		LogLevel:           "info",
		EventsRun:          true,
		EventsTimeout:      10 * time.Second,
		EventsConcurrency:  64,
		EventsRetention:    7 * 24 * time.Hour,
		EventsRecovery:     24 * time.Hour,
		EventsRemember:     90 * 24 * time.Hour,
	}
}

// loadConfig reads path (when not empty) over the defaults, then the
// environment, and validates the result for a command that needs
// everything (serve).
func loadConfig(path string, env func(string) string) (Config, error) {
	return loadConfigFor(path, env, needAll)
}

// loadConfigFor is loadConfig for a command that needs only what n says:
// the settings of other dependencies are checked when set, not required.
func loadConfigFor(path string, env func(string) string, n needs) (Config, error) {
	cfg := defaultConfig()
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("config file: %w", err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) { // an empty file sets nothing
			return cfg, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	if err := applyEnv(&cfg, env); err != nil {
		return cfg, err
	}
	return cfg, cfg.validate(n)
}

// The configuration file: --config, else $GATEWAY_CONFIG, else
// ./configs/gateway.yaml when it exists (the repository's and the image's
// layout), else none: defaults and the environment only.
const (
	defaultConfigFile = "configs/gateway.yaml"
	configEnv         = "GATEWAY_CONFIG"
)

// findConfig returns the configuration file to read ("" for none) and, when
// there is none, where it looked, for the message of a missing setting.
func findConfig(flagPath string, env func(string) string) (path, looked string) {
	switch {
	case flagPath != "":
		return flagPath, ""
	case env(configEnv) != "":
		return env(configEnv), ""
	}
	if _, err := os.Stat(defaultConfigFile); err == nil {
		return defaultConfigFile, ""
	}
	where := "./" + defaultConfigFile
	if wd, err := os.Getwd(); err == nil {
		where = filepath.Join(wd, defaultConfigFile)
	}
	return "", "no configuration file was read: no --config, " + configEnv + " is not set, and " + where + " does not exist"
}

// configFor loads the configuration a command needs, from the file
// findConfig picks and the environment.
func configFor(flagPath string, env func(string) string, n needs) (Config, error) {
	path, looked := findConfig(flagPath, env)
	cfg, err := loadConfigFor(path, env, n)
	if errors.Is(err, errRequired) && looked != "" {
		err = fmt.Errorf("%w\n(%s)", err, looked)
	}
	return cfg, err
}

// applyEnv overrides each field whose environment variable is set.
func applyEnv(cfg *Config, env func(string) string) error {
	v := reflect.ValueOf(cfg).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := f.Tag.Get("env")
		raw := env(name)
		if raw == "" {
			continue
		}
		fv := v.Field(i)
		bad := func(want string) error {
			return fmt.Errorf("setting %s (%s): %q is not %s", name, f.Tag.Get("yaml"), raw, want)
		}
		switch fv.Interface().(type) {
		case string:
			fv.SetString(raw)
		case time.Duration:
			d, err := time.ParseDuration(raw)
			if err != nil {
				return bad("a duration such as 2s or 500ms")
			}
			fv.SetInt(int64(d))
		case int:
			n, err := strconv.Atoi(raw)
			if err != nil {
				return bad("an integer")
			}
			fv.SetInt(int64(n))
		case float64:
			x, err := strconv.ParseFloat(raw, 64)
			if err != nil {
				return bad("a number")
			}
			fv.SetFloat(x)
		case bool:
			b, err := strconv.ParseBool(raw)
			if err != nil {
				return bad("true or false")
			}
			fv.SetBool(b)
		}
	}
	return nil
}

// settingName names a field as both its YAML key and environment variable.
func settingName(field string) string {
	f, _ := reflect.TypeOf(Config{}).FieldByName(field)
	return f.Tag.Get("env") + " (" + f.Tag.Get("yaml") + ")"
}

// checkAddrs checks the two listeners' addresses.
func (c Config) checkAddrs(bad func(field, msg string)) {
	for field, addr := range map[string]string{"Addr": c.Addr, "AdminAddr": c.AdminAddr} {
		if _, port, err := net.SplitHostPort(addr); err != nil {
			bad(field, fmt.Sprintf("%q is not host:port", addr))
		} else if _, err := net.LookupPort("tcp", port); err != nil {
			bad(field, fmt.Sprintf("%q: port %q is not a port number (0-65535)", addr, port))
		}
	}
	if c.Addr == c.AdminAddr && !strings.HasSuffix(c.Addr, ":0") {
		bad("AdminAddr", "must differ from the public address: the admin API never shares the public listener")
	}
}

// maxReplicaTimeout bounds RedisReplicaTimeout.
const maxReplicaTimeout = 3 * time.Second

// errRequired marks a required setting that is not set.
var errRequired = errors.New("is required")

// validate checks every setting that is set, and requires those the
// command's needs call for, before anything connects.
func (c Config) validate(n needs) error {
	var errs []error
	bad := func(field, msg string) { errs = append(errs, fmt.Errorf("setting %s: %s", settingName(field), msg)) }
	c.checkAddrs(bad)
	if err := checkRedisURL(c.RedisURL); err != nil { // the forms: redisurl.go
		bad("RedisURL", err.Error())
	}
	if _, _, err := parseMinReplicas(c.RedisMinReplicas); err != nil { // redisguard.go
		bad("RedisMinReplicas", err.Error())
	}
	if c.RedisReplicaTimeout < 0 || c.RedisReplicaTimeout > maxReplicaTimeout {
		// A key creation waits up to three times, within the 10 s bound
		// of a management call.
		bad("RedisReplicaTimeout", "must be between 0 (1s) and "+maxReplicaTimeout.String()+": a key creation waits up to three times")
	}
	for _, d := range []struct {
		field, db string
		need      needs
	}{{"LiveDatabaseURL", c.LiveDatabaseURL, needLive}, {"TestDatabaseURL", c.TestDatabaseURL, needTest}} {
		field, db := d.field, d.db
		switch {
		case db == "" && n&d.need == 0: // not this command's
		case db == "":
			errs = append(errs, fmt.Errorf("setting %s: %w (postgres://... or sqlite:PATH)", settingName(field), errRequired))
		case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
			if _, err := url.Parse(db); err != nil {
				bad(field, "is not a valid URL")
			}
		case strings.HasPrefix(db, "sqlite:") && len(db) > len("sqlite:"):
		default:
			bad(field, "must start with postgres:// or sqlite:")
		}
	}
	if c.LiveDatabaseURL != "" && c.LiveDatabaseURL == c.TestDatabaseURL {
		bad("TestDatabaseURL", "must differ from the live database: TEST keys must never reach live data")
	}
	c.checkReplicas(bad) // replicas.go
	if c.DatabaseMaxConns < 1 {
		bad("DatabaseMaxConns", "must be at least 1")
	}
	if c.QueryTimeout <= 0 {
		bad("QueryTimeout", "must be positive")
	}
	if c.BreakerFailures < 1 {
		bad("BreakerFailures", "must be at least 1")
	}
	if c.BreakerOpenFor <= 0 {
		bad("BreakerOpenFor", "must be positive")
	}
	// The limiter's own check, here so that a setting out of its bounds is
	// named, not found by the limiter when the gateway starts: the rate and
	// the burst each beside a valid other half.
	checkLimit := func(rate, burst string, l tenants.Limit) {
		if err := (tenants.Limit{Rate: l.Rate, Burst: 1}).Validate(); err != nil {
			bad(rate, refusal(err))
		}
		if err := (tenants.Limit{Rate: 1, Burst: l.Burst}).Validate(); err != nil {
			bad(burst, refusal(err))
		}
	}
	checkLimit("LiveRate", "LiveBurst", tenants.Limit{Rate: c.LiveRate, Burst: c.LiveBurst})
	checkLimit("TestRate", "TestBurst", tenants.Limit{Rate: c.TestRate, Burst: c.TestBurst})
	if c.InflightPerCompany < 1 || c.InflightTotal < c.InflightPerCompany {
		bad("InflightPerCompany", "per-company cap must be at least 1 and not above the total cap")
	}
	if c.KeyCacheTTL <= 0 || c.KeyCacheTTL > time.Second {
		bad("KeyCacheTTL", "must be between 1ns and 1s (revocations must be seen within a second)")
	}
	if c.KeyStaleTTL < 0 {
		bad("KeyStaleTTL", "must not be negative")
	}
	if c.ShutdownTimeout <= 0 {
		bad("ShutdownTimeout", "must be positive")
	}
	if c.DrainDelay < 0 {
		bad("DrainDelay", "must not be negative")
	}
	if _, err := gateway.ParseOrigins(c.CORSAllowedOrigins); err != nil {
		bad("CORSAllowedOrigins", err.Error())
	}
	if _, err := gateway.ParseTrustedProxies(c.TrustedProxies); err != nil {
		bad("TrustedProxies", err.Error())
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		bad("LogLevel", err.Error())
	}
	c.checkEvents(bad)     // eventsconfig.go
	c.checkSecrets(bad, n) // secretsconfig.go
	c.checkAdmin(bad)      // adminconfig.go
	return errors.Join(errs...)
}
