package main

import (
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/events"
)

// eventsConfig is the events' configuration of cfg (without Redis and the
// databases, which connectWith adds).
func eventsConfig(cfg config.Config) events.Config {
	nets, _ := config.ParseNetworks(cfg.EventsAllowedNetworks) // checked with the configuration
	return events.Config{Prefix: cfg.RedisPrefix + "events:", AllowHTTP: cfg.EventsAllowHTTP, AllowedNetworks: nets,
		Timeout: cfg.EventsTimeout, Concurrency: cfg.EventsConcurrency, Retention: cfg.EventsRetention, Recovery: cfg.EventsRecovery,
		Remember: cfg.EventsRemember, FeedWindow: cfg.EventsFeedWindow}
}
