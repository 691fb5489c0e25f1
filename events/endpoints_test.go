package events

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// newManager is a Service on a Redis prefix of its own, for endpoint
// management only (no database), resolving the test's host names without DNS.
func newManager(t *testing.T, rdb *redis.Client, prefix string) *Service {
	s, err := New(Config{Redis: rdb, Prefix: prefix, Lookup: func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "hooks.example.com":
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		case "intranet.example.com":
			return []netip.Addr{netip.MustParseAddr("10.0.0.7")}, nil
		}
		return nil, errors.New("no such host")
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Bad input to endpoint management gets a clear error of the invalid kind
// (or the limit's conflict) and changes nothing.
func TestEndpointInputRefused(t *testing.T) {
	t.Parallel()
	redises(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		testEndpointInputRefused(t, newManager(t, rdb, prefix))
	})
}

func testEndpointInputRefused(t *testing.T, s *Service) {
	ctx := context.Background()
	ok := NewWebhook{CompanyID: testCompany, Mode: invoicing.Test, URL: "https://hooks.example.com/w"}
	for _, c := range []struct {
		name        string
		edit        func(*NewWebhook)
		field, want string // the field named, and a fragment of why
	}{
		{"private address", func(n *NewWebhook) { n.URL = "https://intranet.example.com/w" }, "url", "private address"},
		{"loopback literal", func(n *NewWebhook) { n.URL = "https://127.0.0.1/w" }, "url", "loopback"},
		{"metadata", func(n *NewWebhook) { n.URL = "https://169.254.169.254/latest" }, "url", "link-local"},
		{"http", func(n *NewWebhook) { n.URL = "http://hooks.example.com/w" }, "url", "https"},
		{"malformed", func(n *NewWebhook) { n.URL = "hooks example" }, "url", "absolute URL"},
		{"unknown type", func(n *NewWebhook) { n.Types = []string{"invoice.paid", "invoice.refunded"} }, "types", `"invoice.refunded" is not an event type`},
		{"type twice", func(n *NewWebhook) { n.Types = []string{"client.created", "client.created"} }, "types", "twice"},
		{"bad company", func(n *NewWebhook) { n.CompanyID = "a0000000-0000" }, "companyId", "UUID"},
		{"bad mode", func(n *NewWebhook) { n.Mode = "PROD" }, "mode", "LIVE or TEST"},
		{"description", func(n *NewWebhook) { n.Description = "line\nbreak" }, "description", "printable"},
		{"hidden characters", func(n *NewWebhook) { n.Description = "ERP\u202Eprod" }, "description", "must not contain invisible or direction-changing characters (U+202E)"},
		{"expired", func(n *NewWebhook) { p := time.Now().Add(-time.Minute); n.ExpiresAt = &p }, "expiresAt", "future"},
	} {
		n := ok
		c.edit(&n)
		_, _, err := s.CreateWebhook(ctx, n)
		var fe *invoicing.FieldError
		if !errors.Is(err, ErrInvalidWebhook) || invoicing.KindOf(err) != invoicing.Invalid || !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Message, c.want) {
			t.Errorf("%s: %v, want an invalid endpoint naming %s, about %q", c.name, err, c.field, c.want)
		}
	}
	if eps, err := s.ListWebhooks(ctx, testCompany); err != nil || len(eps) != 0 {
		t.Fatalf("refused creations left %d endpoints (%v)", len(eps), err)
	}
	// Ten per company and mode; the eleventh is refused, also when asked at
	// the same time as others.
	errs := make(chan error, 12)
	for range 12 {
		go func() { _, _, err := s.CreateWebhook(ctx, ok); errs <- err }()
	}
	refused := 0
	for range 12 {
		if err := <-errs; errors.Is(err, ErrWebhookLimit) && invoicing.KindOf(err) == invoicing.Conflict {
			refused++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	eps, _ := s.ListWebhooks(ctx, testCompany)
	if refused != 2 || len(eps) != MaxEndpoints {
		t.Fatalf("%d refused, %d endpoints; want 2 and %d", refused, len(eps), MaxEndpoints)
	}
	// The other mode has its own ten.
	live := ok
	live.Mode = invoicing.Live
	if _, _, err := s.CreateWebhook(ctx, live); err != nil {
		t.Fatalf("a LIVE endpoint beside ten TEST ones: %v", err)
	}
	// A bad update changes nothing either.
	bad := "http://hooks.example.com/"
	before, _ := s.Webhook(ctx, eps[0].ID)
	if _, err := s.UpdateWebhook(ctx, eps[0].ID, Patch{URL: &bad}); !errors.Is(err, ErrInvalidWebhook) {
		t.Fatalf("update to http: %v", err)
	}
	if after, _ := s.Webhook(ctx, eps[0].ID); after.URL != before.URL || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("a refused update changed the endpoint: %+v", after)
	}
	for _, id := range []string{"", "ep_x", "../../etc", "ep_" + strings.Repeat("a", 26)} {
		if _, err := s.Webhook(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Webhook(%q): %v", id, err)
		}
	}
}

// Updates, deletion and the view of an endpoint.
func TestEndpointLifecycle(t *testing.T) {
	t.Parallel()
	redises(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		testEndpointLifecycle(t, newManager(t, rdb, prefix))
	})
}

func testEndpointLifecycle(t *testing.T, s *Service) {
	ctx := context.Background()
	ep, secret, err := s.CreateWebhook(ctx, NewWebhook{CompanyID: strings.ToUpper(testCompany), Mode: invoicing.Live,
		URL: "https://hooks.example.com/w", Types: []string{"invoice.paid"}, Description: "ERP"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "whsec_") || !ep.Enabled || ep.CompanyID != testCompany || !ep.Wants(InvoicePaid) || ep.Wants(ClientCreated) {
		t.Fatalf("created %+v", ep)
	}
	url, desc, all, off := "https://hooks.example.com/v2", "ERP v2", []string{}, false
	up, err := s.UpdateWebhook(ctx, ep.ID, Patch{URL: &url, Description: &desc, Types: &all, Enabled: &off})
	if err != nil {
		t.Fatal(err)
	}
	if up.URL != url || up.Description != desc || !up.Wants(ClientUpdated) || up.Enabled || up.Health.DisabledReason != disabledByRequest {
		t.Fatalf("updated %+v", up)
	}
	got, _ := s.ListWebhooks(ctx, testCompany)
	if len(got) != 1 || got[0].ID != ep.ID || got[0].URL != url {
		t.Fatalf("listed %+v", got)
	}
	if gone, deleted, err := s.DeleteWebhook(ctx, ep.ID); err != nil || !deleted || gone.ID != ep.ID || gone.URL != url {
		t.Fatalf("delete = %+v, %v, %v", gone, deleted, err)
	}
	if _, err := s.Webhook(ctx, ep.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	// Deleting again is safe: the endpoint as it was, not deleted twice.
	if again, deleted, err := s.DeleteWebhook(ctx, ep.ID); err != nil || deleted || again.ID != ep.ID || again.URL != url || again.Description != desc {
		t.Fatalf("second delete = %+v, %v, %v; want the endpoint as it was, not deleted again", again, deleted, err)
	}
	if _, _, err := s.DeleteWebhook(ctx, newEndpointID()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete of an endpoint that never was: %v", err)
	}
	if got, _ := s.ListWebhooks(ctx, testCompany); len(got) != 0 {
		t.Fatalf("listed after delete: %+v", got)
	}
}

// A rotated secret signs beside the new one for the overlap, and no longer
// after it; a receiver with either secret verifies meanwhile.
func TestSecretRotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg, clock := e.clocked()
	s := e.service(cfg)
	ep, oldSecret := e.endpoint(s)
	ctx := context.Background()
	if _, _, err := s.RotateSecret(ctx, ep.ID, MaxOverlap+time.Second); !errors.Is(err, ErrInvalidWebhook) {
		t.Fatalf("too long an overlap: %v", err)
	}
	rotated, newSecret, err := s.RotateSecret(ctx, ep.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if newSecret == oldSecret || rotated.PreviousSecretUntil == nil || !rotated.PreviousSecretUntil.Equal(clock.Now().Truncate(time.Millisecond).Add(time.Hour)) {
		t.Fatalf("rotated %+v", rotated)
	}
	e.run(s)
	e.insertClient(cli1, "Cliente")
	d := e.recv.waitFor(key{ClientCreated, cli1})[0]
	if n := len(strings.Fields(d.header.Get("webhook-signature"))); n != 2 {
		t.Fatalf("%d signatures during the overlap", n)
	}
	for _, sec := range []string{oldSecret, newSecret} {
		wh, _ := standardwebhooks.NewWebhook(sec)
		if err := wh.VerifyIgnoringTimestamp(d.body, d.header); err != nil {
			t.Errorf("a receiver's secret does not verify during the overlap: %v", err)
		}
	}
	clock.Add(time.Hour)
	e.recv.setStatus(http.StatusOK)
	const cli2 = "11000000-0000-4000-8000-000000000002"
	e.insertClient(cli2, "Outro")
	var after delivery
	for _, got := range e.recv.waitFor(key{ClientCreated, cli2}) {
		if got.id == cli2 {
			after = got
		}
	}
	if n := len(strings.Fields(after.header.Get("webhook-signature"))); n != 1 {
		t.Fatalf("%d signatures after the overlap", n)
	}
	wh, _ := standardwebhooks.NewWebhook(oldSecret)
	if err := wh.VerifyIgnoringTimestamp(after.body, after.header); err == nil {
		t.Error("the old secret still verifies after the overlap")
	}
}

// A rotation signs the very next delivery with the new secret, even when
// another instance delivers and has the endpoint in its memory: a receiver
// that trusts the new secret the moment it is shown refuses nothing.
func TestRotationAppliesAtOnceOnEveryInstance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	runner, admin := e.service(e.config()), e.service(e.config())
	e.run(runner)
	ep, _ := e.endpoint(admin)
	ctx := context.Background()
	byID := func(id string) delivery {
		t.Helper()
		var got delivery
		testenv.Eventually(t, "event "+id+" delivered", func() error {
			for _, d := range e.recv.deliveries() {
				if d.header.Get("webhook-id") == id {
					got = d
					return nil
				}
			}
			return errors.New("not delivered yet")
		})
		return got
	}
	warm, err := admin.TestWebhook(ctx, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	byID(warm.ID) // the runner has read the endpoint
	_, secret, err := admin.RotateSecret(ctx, ep.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	next, err := admin.TestWebhook(ctx, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	d := byID(next.ID)
	wh, _ := standardwebhooks.NewWebhook(secret)
	if err := wh.VerifyIgnoringTimestamp(d.body, d.header); err != nil {
		t.Errorf("the delivery after the rotation does not verify with the new secret: %v", err)
	}
}
