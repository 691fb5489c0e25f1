package backend_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Check refuses every negative size and duration at once, naming each
// field; zero values are the defaults and pass; Open refuses the same
// before it connects.
func TestConfigCheck(t *testing.T) {
	t.Parallel()
	if err := (backend.Config{}).Check(); err != nil {
		t.Fatalf("zero values: %v", err)
	}
	bad := backend.Config{URL: "sqlite:" + t.TempDir() + "/x.db", MaxConns: -1, QueryTimeout: -time.Second, BreakerFailures: -1,
		BreakerOpenFor: -time.Second, BreakerFirstProbe: -time.Second, ChangesSettle: -time.Second, ReadYourWritesWindow: -time.Second}
	err := bad.Check()
	fields := map[string]bool{}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var se *invoicing.SettingError
		if errors.As(e, &se) && se.Component == "backend" && strings.HasPrefix(se.Message, "must not be negative") {
			fields[se.Field] = true
		}
	}
	for _, f := range []string{"MaxConns", "QueryTimeout", "BreakerFailures", "BreakerOpenFor", "BreakerFirstProbe", "ChangesSettle", "ReadYourWritesWindow"} {
		if !fields[f] {
			t.Errorf("%s not named: %v", f, err)
		}
	}
	if s, err := backend.Open(context.Background(), bad); err == nil {
		s.Close()
		t.Error("Open took a negative query timeout")
	}
}
