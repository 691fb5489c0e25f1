package client_test

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/invoicing-ao/gateway/client"
)

// The verifier is checked against Standard Webhooks' own Go library (it
// signs, the verifier checks), and the reverse: the library verifies what a
// signer written from the wire format makes, so that both read the format
// alike.

const eventID = "evt_tpq676v2wyuzrl3tacitgepsv3"

// invoiceBody is an invoice event's body as the gateway sends it: compact,
// UTF-8, money as JSON numbers with their decimals.
const invoiceBody = `{"type":"invoice.paid","timestamp":"2026-03-20T14:02:11.530Z","companyId":"0a5e7c1e-0000-4000-8000-00000000000a","mode":"LIVE","data":{"id":"7c0e5a3d-1b2f-4c6d-8e9f-0a1b2c3d4e5f","number":"FT 2026/137","type":"FT","status":"PAID","totalAmount":12345678901234.56,"currency":"AOA","issuedAt":"2026-03-01T09:15:02.120Z","dueDate":"2026-03-31","customer":{"id":"3b9a8f51-2c4d-4e6f-8a1b-2c3d4e5f6a7b","name":"Kianda Comércio Lda","nif":"5417000001"},"items":[{"description":"Consultoria (horas)","quantity":1.5,"unitPrice":1000.00,"total":1500.00}],"updatedAt":"2026-03-20T14:02:11.530Z","transmission":{"status":"VALID","requestId":"AGT-20260301-000123","submittedAt":"2026-03-01T09:20:00.000Z","checkedAt":"2026-03-01T09:35:12.004Z","errors":[]}}}`

func newSecret(t *testing.T) string {
	t.Helper()
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b[:])
}

// librarySignature is the library's v1 signature of a delivery.
func librarySignature(t *testing.T, secret, id string, at time.Time, body string) string {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := wh.Sign(id, at, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func deliveryHeaders(id string, at time.Time, signatures ...string) http.Header {
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
	h.Set("webhook-signature", strings.Join(signatures, " "))
	return h
}

func verifierAt(t *testing.T, now time.Time, tolerance time.Duration, secrets ...string) *client.WebhookVerifier {
	t.Helper()
	v, err := client.NewWebhookVerifier(client.WebhookConfig{Secrets: secrets, Tolerance: tolerance, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestWebhookVerifierAcceptsLibrarySignatures(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	sent := time.Date(2026, 3, 20, 14, 2, 12, 0, time.UTC)
	h := deliveryHeaders(eventID, sent, librarySignature(t, secret, eventID, sent, invoiceBody))
	// The tolerance's edges, either side of the receiver's clock.
	for _, skew := range []time.Duration{0, 5 * time.Minute, -5 * time.Minute, 4*time.Minute + 59*time.Second} {
		ev, err := verifierAt(t, sent.Add(skew), 0, secret).Verify(h, []byte(invoiceBody))
		if err != nil {
			t.Fatalf("clock %v from the timestamp: %v", skew, err)
		}
		if ev.ID != eventID || ev.Type != string(client.InvoicePaid) || !ev.Timestamp.Equal(time.Date(2026, 3, 20, 14, 2, 11, 530e6, time.UTC)) ||
			ev.CompanyID != "0a5e7c1e-0000-4000-8000-00000000000a" || ev.Mode != "LIVE" {
			t.Fatalf("event %s %s %v %s %s", ev.ID, ev.Type, ev.Timestamp, ev.CompanyID, ev.Mode)
		}
	}
	ev, _ := verifierAt(t, sent, 0, secret).Verify(h, []byte(invoiceBody))
	inv, err := ev.Invoice()
	if err != nil {
		t.Fatal(err)
	}
	// Money stays exact (16 digits: a float64 would round it).
	if inv.Number != "FT 2026/137" || inv.Status != client.PAID || inv.TotalAmount.String() != "12345678901234.56" ||
		inv.Items[0].UnitPrice.String() != "1000.00" || inv.Transmission.Status != client.VALID {
		t.Errorf("invoice %+v", inv)
	}
	if _, err := ev.Client(); err == nil {
		t.Error("Client() of an invoice event: no error")
	}
}

func TestWebhookVerifierRefuses(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	sent := time.Date(2026, 3, 20, 14, 2, 12, 0, time.UTC)
	sig := librarySignature(t, secret, eventID, sent, invoiceBody)
	good := func() http.Header { return deliveryHeaders(eventID, sent, sig) }
	without := func(name string) http.Header { h := good(); h.Del(name); return h }
	with := func(name, value string) http.Header { h := good(); h.Set(name, value); return h }
	notEvent := `{"hello":"world"}`
	cases := []struct {
		name    string
		h       http.Header
		body    string
		secret  string
		now     time.Time
		tol     time.Duration
		want    error
		wantMsg string
	}{
		{name: "tampered body", h: good(), body: strings.Replace(invoiceBody, "12345678901234.56", "12345678901234.57", 1), want: client.ErrWebhookSignature},
		{name: "body re-encoded", h: good(), body: strings.Replace(invoiceBody, `"type":"invoice.paid",`, `"type": "invoice.paid",`, 1), want: client.ErrWebhookSignature},
		{name: "wrong secret", h: good(), secret: newSecret(t), want: client.ErrWebhookSignature},
		{name: "other id", h: with("webhook-id", "evt_aaaaaaaaaaaaaaaaaaaaaaaaaa"), want: client.ErrWebhookSignature},
		{name: "timestamp moved", h: with("webhook-timestamp", strconv.FormatInt(sent.Unix()+1, 10)), want: client.ErrWebhookSignature},
		{name: "only another version", h: with("webhook-signature", "v1a,"+strings.TrimPrefix(sig, "v1,")), want: client.ErrWebhookSignature},
		{name: "not base64", h: with("webhook-signature", "v1,???"), want: client.ErrWebhookSignature},
		{name: "too old", h: good(), now: sent.Add(5*time.Minute + time.Second), want: client.ErrWebhookTimestamp, wantMsg: "5m1s"},
		{name: "too new", h: good(), now: sent.Add(-5*time.Minute - time.Second), want: client.ErrWebhookTimestamp, wantMsg: "-5m1s"},
		{name: "own tolerance", h: good(), now: sent.Add(61 * time.Second), tol: time.Minute, want: client.ErrWebhookTimestamp},
		{name: "no webhook-id", h: without("webhook-id"), want: client.ErrWebhookHeaders},
		{name: "no webhook-timestamp", h: without("webhook-timestamp"), want: client.ErrWebhookHeaders},
		{name: "no webhook-signature", h: without("webhook-signature"), want: client.ErrWebhookHeaders},
		{name: "timestamp in milliseconds' form", h: with("webhook-timestamp", "2026-03-20T14:02:12Z"), want: client.ErrWebhookHeaders},
		{name: "signed, but not an event", body: notEvent,
			h: deliveryHeaders(eventID, sent, librarySignature(t, secret, eventID, sent, notEvent)), want: client.ErrWebhookBody},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.body == "" {
				c.body = invoiceBody
			}
			if c.secret == "" {
				c.secret = secret
			}
			if c.now.IsZero() {
				c.now = sent
			}
			ev, err := verifierAt(t, c.now, c.tol, c.secret).Verify(c.h, []byte(c.body))
			if !errors.Is(err, c.want) || ev != nil {
				t.Fatalf("got %v, %v; want %v", ev, err, c.want)
			}
			if !strings.Contains(err.Error(), c.wantMsg) || strings.Contains(err.Error(), c.secret) {
				t.Errorf("message %q: want %q in it, and never the secret", err, c.wantMsg)
			}
		})
	}
}

// During a rotation the gateway signs with both secrets, the new one first:
// a receiver that knows either verifies; one that knows neither does not.
func TestWebhookVerifierDuringRotation(t *testing.T) {
	t.Parallel()
	oldSecret, current, other := newSecret(t), newSecret(t), newSecret(t)
	sent := time.Date(2026, 3, 20, 14, 2, 12, 0, time.UTC)
	h := deliveryHeaders(eventID, sent,
		librarySignature(t, current, eventID, sent, invoiceBody), librarySignature(t, oldSecret, eventID, sent, invoiceBody))
	for _, secrets := range [][]string{{oldSecret}, {current}, {other, oldSecret}, {current, oldSecret}} {
		if _, err := verifierAt(t, sent, 0, secrets...).Verify(h, []byte(invoiceBody)); err != nil {
			t.Errorf("a verifier of %d secrets, one of them the old or the new: %v", len(secrets), err)
		}
	}
	if _, err := verifierAt(t, sent, 0, other).Verify(h, []byte(invoiceBody)); !errors.Is(err, client.ErrWebhookSignature) {
		t.Errorf("neither secret: %v", err)
	}
}

// referenceSignature is the wire format written out from its definition
// (events-wire: v1, base64 of HMAC-SHA256 with the secret's decoded key over
// "id.timestamp.body"), independently of both the verifier and the library.
func referenceSignature(t *testing.T, secret, id string, at time.Time, body string) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(at.Unix(), 10) + "." + body))
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func TestLibraryVerifiesTheWireFormat(t *testing.T) {
	t.Parallel()
	secret, rotated := newSecret(t), newSecret(t)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now() // the library reads the real clock
	single := deliveryHeaders(eventID, now, referenceSignature(t, secret, eventID, now, invoiceBody))
	if err := wh.Verify([]byte(invoiceBody), single); err != nil {
		t.Fatalf("the library refuses the wire format: %v", err)
	}
	// Two signatures, the one the library knows second.
	both := deliveryHeaders(eventID, now,
		referenceSignature(t, rotated, eventID, now, invoiceBody), referenceSignature(t, secret, eventID, now, invoiceBody))
	if err := wh.Verify([]byte(invoiceBody), both); err != nil {
		t.Fatalf("the library refuses a rotation's two signatures: %v", err)
	}
	if err := wh.Verify([]byte(invoiceBody+" "), single); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Fatalf("the library accepts an altered body: %v", err)
	}
	// The library and the reference agree byte for byte, and the verifier
	// reads the reference's signature as it reads the library's.
	if ref, lib := referenceSignature(t, secret, eventID, now, invoiceBody), librarySignature(t, secret, eventID, now, invoiceBody); ref != lib {
		t.Fatalf("reference %s, library %s", ref, lib)
	}
	if _, err := verifierAt(t, now, 0, secret).Verify(both, []byte(invoiceBody)); err != nil {
		t.Fatal(err)
	}
}

func TestNewWebhookVerifierChecksSecrets(t *testing.T) {
	t.Parallel()
	short := "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 16))
	for name, secrets := range map[string][]string{
		"none":          nil,
		"no prefix":     {strings.TrimPrefix(newSecret(t), "whsec_")},
		"not base64":    {"whsec_not*base64"},
		"too short":     {short},
		"one bad of 2":  {newSecret(t), "igw_live_4Vq0Xb1e6cJk9dPzR2uWmA7sYt3nLhG8fQo5iKxEwTj"},
		"empty":         {""},
		"base64url key": {"whsec_" + base64.URLEncoding.EncodeToString([]byte(strings.Repeat("\xff", 32)))},
	} {
		_, err := client.NewWebhookVerifier(client.WebhookConfig{Secrets: secrets})
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		for _, s := range secrets {
			if s != "" && strings.Contains(err.Error(), strings.TrimPrefix(s, "whsec_")) {
				t.Errorf("%s: the error quotes the secret: %v", name, err)
			}
		}
	}
}

func TestWebhookEventClient(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	sent := time.Now()
	body := `{"type":"client.updated","timestamp":"2026-03-12T08:30:45.310Z","companyId":"0a5e7c1e-0000-4000-8000-00000000000a","mode":"TEST","data":{"id":"3b9a8f51-2c4d-4e6f-8a1b-2c3d4e5f6a7b","name":"Kianda Comércio Lda","nif":null,"email":"financeiro@kianda.co.ao","phone":null,"address":null,"type":null,"createdAt":"2026-03-01T09:15:02.120Z","updatedAt":"2026-03-12T08:30:45.310Z"}}`
	// The default clock (time.Now) and tolerance.
	v, err := client.NewWebhookVerifier(client.WebhookConfig{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := v.Verify(deliveryHeaders(eventID, sent, librarySignature(t, secret, eventID, sent, body)), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ev.Client()
	if ev.Mode != "TEST" || ev.CompanyID != "0a5e7c1e-0000-4000-8000-00000000000a" {
		t.Errorf("event of %q in mode %q", ev.CompanyID, ev.Mode)
	}
	if err != nil || c.Name != "Kianda Comércio Lda" || c.Nif != nil || c.Type != nil || !c.UpdatedAt.Equal(ev.Timestamp) {
		t.Fatalf("client %+v, %v", c, err)
	}
	if _, err := ev.Invoice(); err == nil || !strings.Contains(err.Error(), "client.updated") {
		t.Errorf("Invoice() of a client event: %v", err)
	}
	old := deliveryHeaders(eventID, sent.Add(-6*time.Minute), librarySignature(t, secret, eventID, sent.Add(-6*time.Minute), body))
	if _, err := v.Verify(old, []byte(body)); !errors.Is(err, client.ErrWebhookTimestamp) {
		t.Errorf("a delivery sent 6 minutes ago, by the default clock and tolerance: %v", err)
	}
}

// A receiver serving several companies in both modes from one URL, each
// endpoint with its own secret: WebhookOwner names the endpoint whose
// verifier to use, and only that verifier's secret verifies the delivery,
// so a body altered to name another company or mode is refused.
func TestWebhookOwnerChoosesTheVerifier(t *testing.T) {
	t.Parallel()
	const a, b = "0a5e7c1e-0000-4000-8000-00000000000a", "0b5e7c1e-0000-4000-8000-00000000000b"
	sent := time.Date(2026, 3, 20, 14, 2, 12, 0, time.UTC)
	type owner struct{ company, mode string }
	secrets := map[owner]string{}
	verifiers := map[owner]*client.WebhookVerifier{}
	for _, o := range []owner{{a, "LIVE"}, {a, "TEST"}, {b, "LIVE"}, {b, "TEST"}} {
		secrets[o] = newSecret(t)
		verifiers[o] = verifierAt(t, sent, 0, secrets[o])
	}
	receive := func(h http.Header, body string) (owner, error) {
		company, mode, err := client.WebhookOwner([]byte(body))
		if err != nil {
			return owner{}, err
		}
		v := verifiers[owner{company, mode}]
		if v == nil {
			return owner{}, errors.New("no endpoint of that company and mode")
		}
		ev, err := v.Verify(h, []byte(body))
		if err != nil {
			return owner{}, err
		}
		return owner{ev.CompanyID, ev.Mode}, nil
	}
	bodyOf := func(o owner) string {
		return strings.Replace(strings.Replace(invoiceBody, a, o.company, 1), `"mode":"LIVE"`, `"mode":"`+o.mode+`"`, 1)
	}
	for o := range secrets {
		body := bodyOf(o)
		h := deliveryHeaders(eventID, sent, librarySignature(t, secrets[o], eventID, sent, body))
		if got, err := receive(h, body); err != nil || got != o {
			t.Errorf("a delivery of %v: routed to %v, %v", o, got, err)
		}
		for other := range secrets {
			if other == o {
				continue
			}
			// Signed for o's endpoint, altered to name another company or mode.
			if got, err := receive(h, bodyOf(other)); !errors.Is(err, client.ErrWebhookSignature) {
				t.Errorf("%v's delivery altered to name %v: routed to %v, %v", o, other, got, err)
			}
		}
	}
	for _, body := range []string{
		`{"type":"invoice.paid","timestamp":"2026-03-20T14:02:11.530Z","data":{"id":"x"}}`,
		`{"type":"invoice.paid","companyId":"` + a + `","mode":"live","data":{"id":"x"}}`,
		`{"type":"invoice.paid","companyId":"","mode":"LIVE","data":{"id":"x"}}`,
		`not json`,
	} {
		if c, m, err := client.WebhookOwner([]byte(body)); !errors.Is(err, client.ErrWebhookBody) {
			t.Errorf("WebhookOwner(%s) = %q, %q, %v; want ErrWebhookBody", body, c, m, err)
		}
	}
}

// A body without companyId and mode (sent by a gateway before API 1.6.0)
// still verifies, its event's CompanyID and Mode empty: only a receiver
// that routes by them (WebhookOwner) refuses it.
func TestWebhookVerifierReadsABodyWithoutOwner(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	sent := time.Date(2026, 3, 20, 14, 2, 12, 0, time.UTC)
	body := strings.Replace(invoiceBody, `"companyId":"0a5e7c1e-0000-4000-8000-00000000000a","mode":"LIVE",`, "", 1)
	ev, err := verifierAt(t, sent, 0, secret).Verify(deliveryHeaders(eventID, sent, librarySignature(t, secret, eventID, sent, body)), []byte(body))
	if err != nil || ev.CompanyID != "" || ev.Mode != "" {
		t.Fatalf("%+v, %v", ev, err)
	}
}

// The generated body types read whose an event is, typed.
func TestGeneratedWebhookBodies(t *testing.T) {
	t.Parallel()
	var b client.InvoicePaidJSONBody
	if err := json.Unmarshal([]byte(invoiceBody), &b); err != nil {
		t.Fatal(err)
	}
	if b.CompanyId.String() != "0a5e7c1e-0000-4000-8000-00000000000a" || b.Mode != client.InvoicePaidJSONBodyModeLIVE || !b.Mode.Valid() || b.Type != client.InvoicePaid {
		t.Errorf("body %+v", b)
	}
}
