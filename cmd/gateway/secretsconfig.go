package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/events"
)

// The webhook signing secrets' key (internal/config/secrets.go): named at
// start when secrets are kept in plain text, taken up by the first instance
// that starts with a new one, and `gateway webhooks reseal`. The demo makes
// a key of its own, as its Redis lives and dies with it.

// warnPlainSecrets names the choice of plain text at start.
func warnPlainSecrets(cfg config.Config, logger *slog.Logger) {
	if cfg.WebhookSecretsPlaintext {
		logger.Warn("webhook signing secrets are kept in plain text in Redis (" + config.SettingName("WebhookSecretsPlaintext") +
			"): whoever reads Redis can sign for every integrator; set " + config.SettingName("WebhookSecretsKey") + " (gateway state keygen)")
	}
}

// resealAtStart seals with the current key the secrets kept in plain text or
// under an old key (events.Service.Reseal): a new key, or sealing newly
// configured, is taken up by the first instance that starts with it. With
// Redis down, it waits until Redis has been read (redisguard.go: the
// replicas a change waits for are then Redis's own) and says nothing
// meanwhile: the dependency watcher names the outage, and a warning to run
// the reseal would point at the wrong fix.
func resealAtStart(ctx context.Context, d *deps, logger *slog.Logger) {
	waited := false
	for {
		if !redisRead(ctx, d.guard) {
			waited = true
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		actx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		r, err := d.events.Reseal(actx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, events.ErrUnavailable) && d.guard.watcher.Check(ctx).Err != nil:
			waited = true // Redis went away again: once it is read again
			continue
		case err != nil:
			logger.Warn("webhook signing secrets not sealed again with the current key; `gateway webhooks reseal` does it", "err", err)
		case len(r.Unopened) > 0:
			logger.Error("webhook endpoints whose signing secret no configured key opens: their deliveries fail until the key that sealed them is in "+
				config.SettingName("WebhookSecretsOldKeys")+", or their secret is rotated", "endpoints", r.Unopened)
		case r.Resealed > 0:
			logger.Info("webhook signing secrets sealed with the current key", "endpoints", r.Resealed)
		case waited:
			logger.Info("webhook signing secrets read once Redis answered: every one is sealed with the current key", "endpoints", r.Webhooks)
		}
		return
	}
}

// redisRead reports whether the guard's last reading of Redis reached it.
func redisRead(ctx context.Context, g *redisGuard) bool {
	return ctx.Err() == nil && g.watcher != nil && g.watcher.Last().Err == nil && !g.watcher.Last().At.IsZero()
}

func webhooksReseal(asJSON *bool) action {
	return func(ctx context.Context, c *invocation) error {
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (events.Resealed, error) {
			r, err := d.events.Reseal(ctx)
			if r.Unopened == nil {
				r.Unopened = []string{} // a list in JSON, empty or not
			}
			return r, err
		}, func(w io.Writer, r events.Resealed) error {
			fmt.Fprintf(w, "%d webhook endpoints read, %d sealed again with the current key.\n", r.Webhooks, r.Resealed)
			switch cfg, _ := c.config(); {
			case len(r.Unopened) == 0 && cfg.WebhookSecretsPlaintext:
				fmt.Fprintln(w, "Every signing secret is kept in plain text ("+config.SettingName("WebhookSecretsPlaintext")+").")
				return nil
			case len(r.Unopened) == 0:
				fmt.Fprintln(w, "Every signing secret is sealed with the current key: the old keys are no longer needed.")
				return nil
			}
			return fmt.Errorf("%d endpoints have a signing secret that no configured key opens (%s): put the key that sealed them in %s, or rotate their secret",
				len(r.Unopened), strings.Join(r.Unopened, ", "), config.SettingName("WebhookSecretsOldKeys"))
		})
	}
}
