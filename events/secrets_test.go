package events

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/invoicing-ao/gateway/internal/seal"
)

func keyring(t *testing.T, current string, old ...string) *seal.Keyring {
	t.Helper()
	k, err := seal.NewKeyring(current, old...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newSealKey(t *testing.T) string {
	t.Helper()
	id, _, err := seal.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// storedSecrets is what Redis holds of an endpoint's secrets.
func (e *env) storedSecrets(s *Service, id string) []string {
	e.t.Helper()
	raw := e.rdb.HGet(context.Background(), s.l.endpoint(id), "cfg").Val()
	var c config
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, sec := range c.Secrets {
		out = append(out, sec.Secret)
	}
	return out
}

// verified waits for a delivery of k and checks its signature with secret.
func (e *env) verified(k key, secret string) {
	e.t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, d := range e.recv.waitFor(k) {
		if d.parsed.Type == k.typ && d.id == k.id {
			if err := wh.Verify(d.body, d.header); err != nil {
				e.t.Fatalf("%v: signature does not verify with the endpoint's secret: %v", k, err)
			}
			return
		}
	}
}

// With a key, Redis holds no signing secret in plain text: neither the
// created one nor the rotated ones; deliveries are signed with them all the
// same. A key rotated (the new one current, the old one kept to open) is
// taken up by Reseal, after which the old key can go; a secret stored in
// plain text before sealing was configured keeps working and is sealed too.
func TestSigningSecretsSealedAtRest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k1 := newSealKey(t)
	cfg := e.config()
	cfg.Secrets = keyring(t, k1)
	s := e.service(cfg)
	ep, secret := e.endpoint(s)
	ctx := context.Background()
	rot, secret2, err := s.RotateSecret(ctx, ep.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range e.storedSecrets(s, ep.ID) {
		if !seal.Sealed(v) {
			t.Fatalf("stored secret not sealed: %.12s…", v)
		}
	}
	dump := e.dump()
	for _, sec := range []string{secret, secret2} {
		if strings.Contains(dump, sec) || strings.Contains(dump, strings.TrimPrefix(sec, "whsec_")[:16]) {
			t.Fatal("a signing secret is in Redis in plain text")
		}
	}
	if strings.Contains(dump, "whsec_") {
		t.Fatal("Redis holds something shaped like a signing secret")
	}

	// Key rotation: k2 seals, k1 still opens; Reseal leaves nothing for k1.
	k2 := newSealKey(t)
	cfg.Secrets = keyring(t, k2, k1)
	s2 := e.service(cfg)
	r, err := s2.Reseal(ctx)
	if err != nil || r.Resealed != 1 || len(r.Unopened) != 0 {
		t.Fatalf("Reseal: %+v %v", r, err)
	}
	if again, _ := s2.Reseal(ctx); again.Resealed != 0 {
		t.Errorf("a second Reseal wrote %d endpoints", again.Resealed)
	}
	after, _ := s2.Webhook(ctx, ep.ID)
	if !after.UpdatedAt.Equal(rot.UpdatedAt) {
		t.Errorf("Reseal moved updatedAt from %v to %v", rot.UpdatedAt, after.UpdatedAt)
	}
	cfg.Secrets = keyring(t, k2) // the old key dropped
	s3 := e.service(cfg)
	e.run(s3)
	e.insertClient(cli1, "Selado")
	e.verified(key{ClientCreated, cli1}, secret2)
	e.verified(key{ClientCreated, cli1}, secret) // the previous one, in its overlap
}

// An endpoint stored in plain text (before sealing was configured) keeps
// its deliveries signed once a key is set, and Reseal seals its secret.
func TestPlainSecretsMigrated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	plain := e.service(cfg) // no Secrets: plain text, as before
	ep, secret := e.endpoint(plain)
	if v := e.storedSecrets(plain, ep.ID); len(v) != 1 || v[0] != secret {
		t.Fatalf("without a key the secret is stored as is")
	}
	cfg.Secrets = keyring(t, newSealKey(t))
	s := e.service(cfg)
	e.run(s)
	e.insertClient(cli1, "Antigo")
	e.verified(key{ClientCreated, cli1}, secret)
	r, err := s.Reseal(context.Background())
	if err != nil || r.Resealed != 1 {
		t.Fatalf("Reseal: %+v %v", r, err)
	}
	if v := e.storedSecrets(s, ep.ID); !seal.Sealed(v[0]) {
		t.Fatal("the plain secret was not sealed")
	}
	const cli2 = "11000000-0000-4000-8000-000000000002"
	e.insertClient(cli2, "Migrado")
	e.verified(key{ClientCreated, cli2}, secret)

	// Without the key that sealed it, a delivery fails and says why;
	// Reseal names the endpoint.
	cfg.Secrets = keyring(t, newSealKey(t))
	lost := e.service(cfg)
	r, err = lost.Reseal(context.Background())
	if err != nil || len(r.Unopened) != 1 || r.Unopened[0] != ep.ID {
		t.Fatalf("Reseal with a foreign key: %+v %v", r, err)
	}
	got, _ := lost.Webhook(context.Background(), ep.ID)
	if _, err := lost.signingKeys(&got, time.Now()); err == nil || !strings.Contains(err.Error(), "webhookSecretsKey") {
		t.Errorf("signing with a foreign key: %v", err)
	}
}

// dump is every events key's value of the test, as text.
func (e *env) dump() string {
	e.t.Helper()
	ctx := context.Background()
	var sb strings.Builder
	for _, k := range e.keys() {
		if typ := e.rdb.Type(ctx, k).Val(); typ == "hash" {
			for f, v := range e.rdb.HGetAll(ctx, k).Val() {
				sb.WriteString(k + " " + f + " " + v + "\n")
			}
		} else if typ == "string" {
			sb.WriteString(k + " " + e.rdb.Get(ctx, k).Val() + "\n")
		}
	}
	return sb.String()
}
