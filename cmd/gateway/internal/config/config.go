// Package config is the gateway's configuration: its settings, their
// defaults, the YAML file and the GATEWAY_* environment variables that set
// them, and the checks that name a wrong one by both its names before
// anything connects. The gateway command loads it; the checks of the deploy
// files read it too, so that a manifest cannot set what the gateway does
// not read.
package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the gateway's configuration: defaults, then the YAML file, then
// the environment (each field's env tag), the later winning. Every field has
// both a YAML key and an environment variable, and errors name both. A
// setting that a component reads (the databases' pool, deadline and
// breaker, the default limits and caps in flight, the keys' caches, the
// events' timings) stays zero unless set, and zero is that component's
// default, as its Config documents (docs/operators.md lists them).
type Config struct {
	Addr       string `yaml:"addr" env:"GATEWAY_ADDR"`              // public listener
	AdminAddr  string `yaml:"adminAddr" env:"GATEWAY_ADMIN_ADDR"`   // internal listener: admin API
	AdminToken string `yaml:"adminToken" env:"GATEWAY_ADMIN_TOKEN"` // empty disables the admin API; else strong (admin.go)
	// AdminHosts is a comma-separated list of the host names the admin
	// listener answers to besides its IP addresses and loopback names;
	// empty means none (admin.go).
	AdminHosts string `yaml:"adminHosts" env:"GATEWAY_ADMIN_HOSTS"`
	// CursorSecret keys the lists' cursors (the same on every instance);
	// empty means the deployment's own key, made once in Redis by the first
	// instance that needs it and read by every other.
	CursorSecret string `yaml:"cursorSecret" env:"GATEWAY_CURSOR_SECRET"`

	RedisURL        string `yaml:"redisURL" env:"GATEWAY_REDIS_URL"`
	RedisPrefix     string `yaml:"redisPrefix" env:"GATEWAY_REDIS_PREFIX"` // prepended to every Redis key (environments sharing a Redis)
	LiveDatabaseURL string `yaml:"liveDatabaseURL" env:"GATEWAY_LIVE_DATABASE_URL"`
	TestDatabaseURL string `yaml:"testDatabaseURL" env:"GATEWAY_TEST_DATABASE_URL"`
	// HistoryDatabaseURL is the gateway's own database (postgres://... or
	// sqlite:PATH), never one of the platform's: the audit log, and the
	// events' history. Required by serve and by the commands that record
	// or read the audit log; each applies its migrations first.
	HistoryDatabaseURL string `yaml:"historyDatabaseURL" env:"GATEWAY_HISTORY_DATABASE_URL"`

	// RedisMinReplicas is how many Redis replicas must acknowledge each
	// write of a change of the control plane (keys, limits, webhook
	// endpoints, audit events) before it is reported done: "auto" (unset,
	// or empty) one when Redis is replicated and none when it is not, an
	// integer that number, and "0" none at all, named at start as an
	// opt-out (cmd/gateway/redisguard.go). RedisReplicaTimeout bounds each wait for
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

	// Events (webhooks; events.go, docs/operators.md): whether this
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

	// Webhook signing secrets at rest (secrets.go): sealed in Redis
	// with this age key; older keys still open what they sealed (key
	// rotation). Required where secrets are made or used, unless
	// WebhookSecretsPlaintext keeps them in plain text.
	WebhookSecretsKey       string `yaml:"webhookSecretsKey" env:"GATEWAY_WEBHOOK_SECRETS_KEY"`
	WebhookSecretsOldKeys   string `yaml:"webhookSecretsOldKeys" env:"GATEWAY_WEBHOOK_SECRETS_OLD_KEYS"`
	WebhookSecretsPlaintext bool   `yaml:"webhookSecretsPlaintext" env:"GATEWAY_WEBHOOK_SECRETS_PLAINTEXT"`
}

// Default is the configuration with nothing set: the binary's own
// defaults. A setting a component reads is zero here, and the component
// applies its own default (its Config documents it: backend, tenants,
// authz, events), so that each default is written once.
func Default() Config {
	return Config{
		Addr:             ":8080",
		AdminAddr:        "127.0.0.1:8081",
		RedisURL:         "redis://127.0.0.1:6379/0",
		RedisMinReplicas: AutoReplicas,
		ShutdownTimeout:  15 * time.Second,
		LogLevel:         "info",
		EventsRun:        true,
	}
}

// Needs says which dependencies a command talks to, so that only their
// settings are required: `keys list` runs without a database setting. The
// zero value needs nothing, and reads no configuration.
type Needs uint8

const (
	NeedRedis   Needs = 1 << iota
	NeedLive          // the live database
	NeedTest          // the sandbox database
	NeedSecrets       // writes or uses webhook signing secrets: their key (secrets.go)
	NeedHistory       // the gateway's own database: records or reads the audit log

	NeedDatabases = NeedLive | NeedTest
	NeedAll       = NeedRedis | NeedDatabases | NeedSecrets | NeedHistory // serve
)

// Load reads path (when not empty) over the defaults, then the environment,
// and validates the result for a command that needs what n says: the
// settings of other dependencies are checked when set, not required.
func Load(path string, env func(string) string, n Needs) (Config, error) {
	cfg := Default()
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
	if err := cfg.ApplyEnv(env); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate(n)
}

// The configuration file: --config, else $GATEWAY_CONFIG, else
// ./configs/gateway.yaml when it exists (the repository's and the image's
// layout), else none: defaults and the environment only.
const (
	File   = "configs/gateway.yaml"
	EnvVar = "GATEWAY_CONFIG"
)

// find returns the configuration file to read ("" for none) and, when
// there is none, where it looked, for the message of a missing setting.
func find(flagPath string, env func(string) string) (path, looked string) {
	switch {
	case flagPath != "":
		return flagPath, ""
	case env(EnvVar) != "":
		return env(EnvVar), ""
	}
	if _, err := os.Stat(File); err == nil {
		return File, ""
	}
	where := "./" + File
	if wd, err := os.Getwd(); err == nil {
		where = filepath.Join(wd, File)
	}
	return "", "no configuration file was read: no --config, " + EnvVar + " is not set, and " + where + " does not exist"
}

// ForCommand loads the configuration a command needs, from the file its
// --config flag names (flagPath, "" when not given), else the one the
// environment or the working directory has (File, EnvVar), and the
// environment.
func ForCommand(flagPath string, env func(string) string, n Needs) (Config, error) {
	path, looked := find(flagPath, env)
	cfg, err := Load(path, env, n)
	if errors.Is(err, errRequired) && looked != "" {
		err = fmt.Errorf("%w\n(%s)", err, looked)
	}
	return cfg, err
}

// ApplyEnv overrides each field whose environment variable is set.
func (c *Config) ApplyEnv(env func(string) string) error {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := f.Tag.Get("env")
		raw := env(name)
		if raw == "" {
			continue
		}
		if err := setField(v.Field(i), raw); err != nil {
			return fmt.Errorf("setting %s (%s): %q is not %s", name, f.Tag.Get("yaml"), raw, err.Error())
		}
	}
	return nil
}

// setField sets a field from its variable's text; the error says what the
// text should have been.
func setField(fv reflect.Value, raw string) error {
	switch fv.Interface().(type) {
	case string:
		fv.SetString(raw)
	case time.Duration:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return errors.New("a duration such as 2s or 500ms")
		}
		fv.SetInt(int64(d))
	case int:
		n, err := strconv.Atoi(raw)
		if err != nil {
			return errors.New("an integer")
		}
		fv.SetInt(int64(n))
	case float64:
		x, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return errors.New("a number")
		}
		fv.SetFloat(x)
	case bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return errors.New("true or false")
		}
		fv.SetBool(b)
	}
	return nil
}

// SettingName names a field as both its environment variable and its YAML
// key: "GATEWAY_REDIS_URL (redisURL)".
func SettingName(field string) string {
	f, _ := reflect.TypeOf(Config{}).FieldByName(field)
	return f.Tag.Get("env") + " (" + f.Tag.Get("yaml") + ")"
}

// RedactURL hides the password of a URL setting (a database's, Redis's)
// before it reaches a message.
func RedactURL(u string) string {
	at := strings.LastIndex(u, "@")
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return u
	}
	creds := u[scheme+3 : at]
	if i := strings.IndexByte(creds, ':'); i >= 0 {
		return u[:scheme+3] + creds[:i] + ":***" + u[at:]
	}
	return u
}
