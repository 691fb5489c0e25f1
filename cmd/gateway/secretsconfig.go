package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/internal/seal"
)

// The webhook signing secrets' key. Whoever reads Redis (a leaked copy, a
// replica, a backup) must not be able to sign for every integrator, so the
// secrets are sealed with an age key (internal/seal) that only the gateway's
// instances hold. Without one, the commands that make or use secrets
// (serve, webhooks create and rotate-secret, events listen, state import)
// refuse to start: plain text is an explicit choice
// (webhookSecretsPlaintext), named in a warning, never a default. The demo
// makes a key of its own, as its Redis lives and dies with it.

// checkSecrets checks the key settings, and requires a key (or the choice of
// plain text) for a command that makes or uses secrets.
func (c Config) checkSecrets(bad func(field, msg string), n needs) {
	_, err := seal.NewKeyring(c.WebhookSecretsKey, oldKeys(c.WebhookSecretsOldKeys)...)
	switch {
	case err != nil && c.WebhookSecretsKey == "":
		bad("WebhookSecretsOldKeys", "needs webhookSecretsKey: the old keys only open what they sealed, the current key seals")
	case err != nil:
		bad("WebhookSecretsKey", err.Error()+"; make one with `gateway state keygen`")
	case c.WebhookSecretsKey != "" && c.WebhookSecretsPlaintext:
		bad("WebhookSecretsPlaintext", "must not be set with webhookSecretsKey: choose sealed secrets (the key) or plain text")
	case n&needSecrets != 0 && c.WebhookSecretsKey == "" && !c.WebhookSecretsPlaintext:
		bad("WebhookSecretsKey", "is required: webhook signing secrets are kept encrypted in Redis with it. "+
			"Make one with `gateway state keygen`, keep it in your secret store and give every instance the same; "+
			"or set "+settingName("WebhookSecretsPlaintext")+"=true to keep them in plain text (docs/security.md)")
	}
}

// oldKeys splits the old keys' setting: comma- or space-separated.
func oldKeys(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' })
}

// secretsKeyring is the configuration's keyring (checked with it): nil
// keeps secrets in plain text.
func secretsKeyring(cfg Config) (*seal.Keyring, error) {
	k, err := seal.NewKeyring(cfg.WebhookSecretsKey, oldKeys(cfg.WebhookSecretsOldKeys)...)
	if err != nil {
		return nil, fmt.Errorf("setting %s: %w", settingName("WebhookSecretsKey"), err)
	}
	return k, nil
}

// warnPlainSecrets names the choice of plain text at start.
func warnPlainSecrets(cfg Config, logger *slog.Logger) {
	if cfg.WebhookSecretsPlaintext {
		logger.Warn("webhook signing secrets are kept in plain text in Redis (" + settingName("WebhookSecretsPlaintext") +
			"): whoever reads Redis can sign for every integrator; set " + settingName("WebhookSecretsKey") + " (gateway state keygen)")
	}
}

// resealAtStart seals with the current key the secrets kept in plain text or
// under an old key (events.Service.Reseal): a new key, or sealing newly
// configured, is taken up by the first instance that starts with it.
func resealAtStart(ctx context.Context, d *deps, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	r, err := d.events.Reseal(ctx)
	switch {
	case err != nil:
		logger.Warn("webhook signing secrets not sealed again with the current key; `gateway webhooks reseal` does it", "err", err)
	case len(r.Unopened) > 0:
		logger.Error("webhook endpoints whose signing secret no configured key opens: their deliveries fail until the key that sealed them is in "+
			settingName("WebhookSecretsOldKeys")+", or their secret is rotated", "endpoints", r.Unopened)
	case r.Resealed > 0:
		logger.Info("webhook signing secrets sealed with the current key", "endpoints", r.Resealed)
	}
}

func webhooksReseal(asJSON *bool) action {
	return func(ctx context.Context, c *invocation) error {
		d, err := c.open(ctx)
		if err != nil {
			return err
		}
		defer d.Close()
		r, err := d.events.Reseal(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			if r.Unopened == nil {
				r.Unopened = []string{}
			}
			return json.NewEncoder(c.stdout).Encode(r)
		}
		fmt.Fprintf(c.stdout, "%d webhook endpoints read, %d sealed again with the current key.\n", r.Endpoints, r.Resealed)
		switch cfg, _ := c.config(); {
		case len(r.Unopened) == 0 && cfg.WebhookSecretsPlaintext:
			fmt.Fprintln(c.stdout, "Every signing secret is kept in plain text ("+settingName("WebhookSecretsPlaintext")+").")
			return nil
		case len(r.Unopened) == 0:
			fmt.Fprintln(c.stdout, "Every signing secret is sealed with the current key: the old keys are no longer needed.")
			return nil
		}
		return fmt.Errorf("%d endpoints have a signing secret that no configured key opens (%s): put the key that sealed them in %s, or rotate their secret",
			len(r.Unopened), strings.Join(r.Unopened, ", "), settingName("WebhookSecretsOldKeys"))
	}
}
