package events

import (
	"errors"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Check, which a configuration is held to when it is loaded, refuses what
// New refuses of the settings, naming the field; zero values are the
// defaults and pass.
func TestCheckNamesTheField(t *testing.T) {
	t.Parallel()
	rdb, _ := testenv.Miniredis(t)
	if err := (Config{}).Check(); err != nil {
		t.Fatalf("zero values: %v", err)
	}
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{Timeout: 20 * time.Second}, "Timeout"},
		{Config{Timeout: -time.Second}, "Timeout"},
		{Config{Concurrency: -1}, "Concurrency"},
		{Config{Retention: time.Hour}, "Retention"},        // shorter than the retry schedule
		{Config{Recovery: -time.Hour}, "Recovery"},         // negative
		{Config{Remember: 6 * 24 * time.Hour}, "Remember"}, // shorter than the default retention
		{Config{FeedWindow: 24 * time.Hour}, "FeedWindow"}, // shorter than the default retention
		{Config{Schedule: []time.Duration{-time.Second}}, "Schedule"},
	} {
		err := c.cfg.Check()
		var se *invoicing.SettingError
		if !errors.As(err, &se) || se.Component != "events" || se.Field != c.field {
			t.Errorf("%+v: Check() = %v, want a setting error of %s", c.cfg, err, c.field)
		}
		c.cfg.Redis = rdb
		if _, nerr := New(c.cfg); nerr == nil || nerr.Error() != err.Error() {
			t.Errorf("%+v: New refused %v, Check %v: want the same", c.cfg, nerr, err)
		}
	}
}
