package authz

import (
	"errors"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Check refuses a cache TTL past the second (which New would clamp) and
// negative durations, naming the field; zero values are the defaults.
func TestConfigCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{}, ""},
		{Config{CacheTTL: DefaultCacheTTL, StaleTTL: time.Hour}, ""},
		{Config{CacheTTL: 2 * time.Second}, "CacheTTL"},
		{Config{CacheTTL: -time.Second}, "CacheTTL"},
		{Config{StaleTTL: -time.Second}, "StaleTTL"},
	} {
		err := c.cfg.Check()
		var se *invoicing.SettingError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%+v: %v", c.cfg, err)
		case c.field != "" && (!errors.As(err, &se) || se.Field != c.field):
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.field)
		}
	}
}
