package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
)

// maxReplicaTimeout bounds RedisReplicaTimeout.
const maxReplicaTimeout = 3 * time.Second

// errRequired marks a required setting that is not set.
var errRequired = errors.New("is required")

// Validate checks every setting that is set, and requires those the
// command's needs call for, before anything connects. Each error names the
// setting by both its names (SettingName).
func (c Config) Validate(n Needs) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	bad := func(field, msg string) { add(fmt.Errorf("setting %s: %s", SettingName(field), msg)) }
	c.checkAddrs(bad)
	c.checkRedis(bad)
	c.checkDatabases(bad, add, n)
	c.checkReplicas(bad) // replicas.go
	c.checkRequests(bad, add)
	if _, err := ParseLevel(c.LogLevel); err != nil {
		bad("LogLevel", err.Error())
	}
	c.checkEvents(bad, add) // events.go
	c.checkSecrets(bad, n)  // secrets.go
	c.checkAdmin(bad)       // admin.go
	return errors.Join(errs...)
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

// checkRedis checks Redis's URL and what each change waits for.
func (c Config) checkRedis(bad func(field, msg string)) {
	if err := checkRedisURL(c.RedisURL); err != nil { // the forms: redisurl.go
		bad("RedisURL", err.Error())
	}
	if _, _, err := ParseMinReplicas(c.RedisMinReplicas); err != nil {
		bad("RedisMinReplicas", err.Error())
	}
	if c.RedisReplicaTimeout < 0 || c.RedisReplicaTimeout > maxReplicaTimeout {
		// A key creation waits up to three times, within the 10 s bound
		// of a management call.
		bad("RedisReplicaTimeout", "must be between 0 (1s) and "+maxReplicaTimeout.String()+": a key creation waits up to three times")
	}
}

// checkDatabases checks the three databases' URLs, and adds an errRequired
// for each the command needs and has not.
func (c Config) checkDatabases(bad func(field, msg string), add func(error), n Needs) {
	for _, d := range []struct {
		field, db string
		need      Needs
	}{{"LiveDatabaseURL", c.LiveDatabaseURL, NeedLive}, {"TestDatabaseURL", c.TestDatabaseURL, NeedTest},
		{"HistoryDatabaseURL", c.HistoryDatabaseURL, NeedHistory}} {
		field, db := d.field, d.db
		switch {
		case db == "" && n&d.need == 0: // not this command's
		case db == "":
			add(fmt.Errorf("setting %s: %w (postgres://... or sqlite:PATH)", SettingName(field), errRequired))
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
	if h := c.HistoryDatabaseURL; h != "" && (h == c.LiveDatabaseURL || h == c.TestDatabaseURL) {
		bad("HistoryDatabaseURL", "must differ from the live and sandbox databases: the gateway's own tables never go into the platform's databases")
	}
}

// checkRequests checks what bounds the requests: the databases' pools and
// breakers, the default limits, the caps in flight, the keys' caches, the
// shutdown, the origins and proxies. Each component's settings are checked
// by the component (checkComponent), defaults applied as it applies them.
func (c Config) checkRequests(bad func(field, msg string), add func(error)) {
	checkComponent(bad, add, backend.Config{MaxConns: c.DatabaseMaxConns, QueryTimeout: c.QueryTimeout,
		BreakerFailures: c.BreakerFailures, BreakerOpenFor: c.BreakerOpenFor, ReadYourWritesWindow: c.ReadYourWritesWindow}.Check(),
		map[string]string{"MaxConns": "DatabaseMaxConns", "QueryTimeout": "QueryTimeout", "BreakerFailures": "BreakerFailures",
			"BreakerOpenFor": "BreakerOpenFor", "ReadYourWritesWindow": "ReadYourWritesWindow"})
	// The limiter's own check, here so that a setting out of its bounds is
	// named, not found by the limiter when the gateway starts: the rate and
	// the burst each beside a valid other half.
	checkLimit := func(rate, burst string, l tenants.Limit) {
		if err := (tenants.Limit{Rate: l.Rate, Burst: 1}).Validate(); err != nil {
			bad(rate, fieldMessage(err))
		}
		if err := (tenants.Limit{Rate: 1, Burst: l.Burst}).Validate(); err != nil {
			bad(burst, fieldMessage(err))
		}
	}
	live, test := tenants.Config{LiveDefault: tenants.Limit{Rate: c.LiveRate, Burst: c.LiveBurst},
		TestDefault: tenants.Limit{Rate: c.TestRate, Burst: c.TestBurst}}.Defaults()
	checkLimit("LiveRate", "LiveBurst", live)
	checkLimit("TestRate", "TestBurst", test)
	checkComponent(bad, add, tenants.GuardConfig{PerCompany: c.InflightPerCompany, Total: c.InflightTotal}.Validate(),
		map[string]string{"PerCompany": "InflightPerCompany", "Total": "InflightTotal"})
	checkComponent(bad, add, authz.Config{CacheTTL: c.KeyCacheTTL, StaleTTL: c.KeyStaleTTL}.Check(),
		map[string]string{"CacheTTL": "KeyCacheTTL", "StaleTTL": "KeyStaleTTL"})
	if c.ShutdownTimeout <= 0 {
		bad("ShutdownTimeout", "must be positive")
	}
	if c.DrainDelay < 0 {
		bad("DrainDelay", "must not be negative")
	}
	if _, err := invoicing.ParseOrigins(c.CORSAllowedOrigins); err != nil {
		bad("CORSAllowedOrigins", err.Error())
	}
	if _, err := authz.ParseNetworks(c.TrustedProxies); err != nil {
		bad("TrustedProxies", "trusted proxy: "+err.Error())
	}
}

// checkComponent names each field a component's check refused (an
// *invoicing.SettingError, or several joined) by its setting: settings maps
// the component's Config fields to ours. An error of another form, which no
// check of ours makes, is added as it is.
func checkComponent(bad func(field, msg string), add func(error), err error, settings map[string]string) {
	if err == nil {
		return
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			checkComponent(bad, add, e, settings)
		}
		return
	}
	var se *invoicing.SettingError
	if errors.As(err, &se) && settings[se.Field] != "" {
		bad(settings[se.Field], se.Message)
		return
	}
	add(err)
}

// fieldMessage is what a value refused must be ("must be from 1 to
// 100000"): the message of an invoicing.FieldError, else the error's text.
func fieldMessage(err error) string {
	var fe *invoicing.FieldError
	if errors.As(err, &fe) {
		return fe.Message
	}
	return err.Error()
}

// ParseLevel reads a log level: debug, info, warn or error.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return 0, fmt.Errorf("%q is not one of debug, info, warn, error", s)
	}
	return l, nil
}
