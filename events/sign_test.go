package events

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// A signature made here verifies with the Standard Webhooks Go library, for
// the current secret and for the previous one during a rotation's overlap;
// a tampered body, a wrong secret or an old timestamp does not.
func TestSignatureVerifiesWithStandardWebhooks(t *testing.T) {
	t.Parallel()
	cur, old := newSecret(), newSecret()
	kc, _ := secretKey(cur)
	ko, _ := secretKey(old)
	body := []byte(`{"type":"invoice.paid","timestamp":"2026-03-10T12:00:00.000Z","data":{"id":"x"}}`)
	id := eventID("TEST", "a0000000-0000-4000-8000-00000000000a", InvoicePaid, "x", "")
	headers := func(at time.Time, b []byte, keys ...[]byte) http.Header {
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
		h.Set("webhook-signature", signature(keys, id, at, b))
		return h
	}
	now := time.Now()
	for _, c := range []struct {
		name   string
		secret string
		h      http.Header
		body   []byte
		ok     bool
	}{
		{"current secret", cur, headers(now, body, kc), body, true},
		{"both secrets, the receiver has the new one", cur, headers(now, body, kc, ko), body, true},
		{"both secrets, the receiver still has the old one", old, headers(now, body, kc, ko), body, true},
		{"tampered body", cur, headers(now, body, kc), []byte(strings.Replace(string(body), "paid", "cancelled", 1)), false},
		{"wrong secret", newSecret(), headers(now, body, kc), body, false},
		{"old timestamp", cur, headers(now.Add(-10*time.Minute), body, kc), body, false},
		{"future timestamp", cur, headers(now.Add(10*time.Minute), body, kc), body, false},
	} {
		wh, err := standardwebhooks.NewWebhook(c.secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(c.body, c.h); (err == nil) != c.ok {
			t.Errorf("%s: Verify = %v, want ok=%v", c.name, err, c.ok)
		}
	}
	// And the other way round: the library's signature is ours, byte for byte.
	wh, _ := standardwebhooks.NewWebhook(cur)
	want, err := wh.Sign(id, now, body)
	if err != nil {
		t.Fatal(err)
	}
	if got := signature([][]byte{kc}, id, now, body); got != want {
		t.Errorf("signature = %q, the library's %q", got, want)
	}
}

func TestSecretForm(t *testing.T) {
	t.Parallel()
	s := newSecret()
	k, err := secretKey(s)
	if !strings.HasPrefix(s, "whsec_") || err != nil || len(k) != 32 {
		t.Fatalf("secret %q: key of %d bytes, %v", s, len(k), err)
	}
	if newSecret() == s {
		t.Fatal("two secrets alike")
	}
	for _, bad := range []string{"", "whsec_", "whsec_!!!", "abc"} {
		if _, err := secretKey(bad); err == nil {
			t.Errorf("secretKey(%q) accepted", bad)
		}
	}
}

// Event ids depend on what changed only, are distinct across modes,
// companies, types, resources and discriminators, and have the documented
// form.
func TestEventID(t *testing.T) {
	t.Parallel()
	base := eventID("LIVE", "co", InvoicePaid, "r", "")
	if base != eventID("LIVE", "co", InvoicePaid, "r", "") {
		t.Fatal("not deterministic")
	}
	if len(base) != 30 || !strings.HasPrefix(base, "evt_") || strings.Trim(base[4:], "abcdefghijklmnopqrstuvwxyz234567") != "" {
		t.Fatalf("form: %q", base)
	}
	// Ids never change: a receiver drops a redelivery by its id, whatever
	// the body says beside the resource (its company and mode among it).
	if got := eventID("LIVE", testCompany, InvoicePaid, docA, ""); got != "evt_u4jp2a6arifz472wsej7diwt7m" {
		t.Errorf("the id of an invoice.paid is now %s", got)
	}
	if got := eventID("TEST", testCompany, InvoiceOverdue, docA, "2026-03-31"); got != "evt_ebm6xv6habc3stmxyp547dgssy" {
		t.Errorf("the id of an invoice.overdue is now %s", got)
	}
	seen := map[string]bool{base: true}
	for _, id := range []string{
		eventID("TEST", "co", InvoicePaid, "r", ""), eventID("LIVE", "co2", InvoicePaid, "r", ""),
		eventID("LIVE", "co", InvoiceCancelled, "r", ""), eventID("LIVE", "co", InvoicePaid, "r2", ""),
		eventID("LIVE", "co", InvoicePaid, "r", "x"), eventID("LIVE", "c", InvoicePaid, "or", ""),
	} {
		if seen[id] {
			t.Errorf("id %s given twice", id)
		}
		seen[id] = true
	}
}
