package config

import (
	"fmt"
	"strings"

	"github.com/invoicing-ao/gateway/internal/seal"
)

// The webhook signing secrets' key. Whoever reads Redis (a leaked copy, a
// replica, a backup) must not be able to sign for every integrator, so the
// secrets are sealed with an age key (internal/seal) that only the gateway's
// instances hold. Without one, the commands that make or use secrets
// (serve, webhooks create and rotate-secret, events listen, state import)
// refuse to start: plain text is an explicit choice
// (webhookSecretsPlaintext), named in a warning, never a default.

// checkSecrets checks the key settings, and requires a key (or the choice of
// plain text) for a command that makes or uses secrets.
func (c Config) checkSecrets(bad func(field, msg string), n Needs) {
	_, err := seal.NewKeyring(c.WebhookSecretsKey, oldKeys(c.WebhookSecretsOldKeys)...)
	switch {
	case err != nil && c.WebhookSecretsKey == "":
		bad("WebhookSecretsOldKeys", "needs webhookSecretsKey: the old keys only open what they sealed, the current key seals")
	case err != nil:
		bad("WebhookSecretsKey", err.Error()+"; make one with `gateway state keygen`")
	case c.WebhookSecretsKey != "" && c.WebhookSecretsPlaintext:
		bad("WebhookSecretsPlaintext", "must not be set with webhookSecretsKey: choose sealed secrets (the key) or plain text")
	case n&NeedSecrets != 0 && c.WebhookSecretsKey == "" && !c.WebhookSecretsPlaintext:
		bad("WebhookSecretsKey", "is required: webhook signing secrets are kept encrypted in Redis with it. "+
			"Make one with `gateway state keygen`, keep it in your secret store and give every instance the same; "+
			"or set "+SettingName("WebhookSecretsPlaintext")+"=true to keep them in plain text (docs/security.md)")
	}
}

// oldKeys splits the old keys' setting: comma- or space-separated.
func oldKeys(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' })
}

// SecretsKeyring is the keyring of the key settings (checked with the
// configuration): nil keeps secrets in plain text.
func (c Config) SecretsKeyring() (*seal.Keyring, error) {
	k, err := seal.NewKeyring(c.WebhookSecretsKey, oldKeys(c.WebhookSecretsOldKeys)...)
	if err != nil {
		return nil, fmt.Errorf("setting %s: %w", SettingName("WebhookSecretsKey"), err)
	}
	return k, nil
}
