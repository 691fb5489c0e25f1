package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// Webhook receivers as integrators write them (the TypeScript program's,
// the Webhooks guide's samples) run as servers and are sent what the
// gateway sends: deliveries signed to the wire format, with an invoice and
// a client as the demo answers them, a retry of one, and deliveries a
// receiver must refuse. Each receiver prints one line per event it
// processes.

// webhookSecret is a signing secret as the gateway makes them.
func webhookSecret(t *testing.T) string {
	t.Helper()
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b[:])
}

// webhookEventID is an event id of the wire format: evt_ and 26 base32
// characters.
func webhookEventID(t *testing.T) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "evt_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// webhookSignature is the webhook-signature header of the wire format: a
// v1 signature per secret (HMAC-SHA256 of "id.timestamp.body" keyed with
// the secret's base64 decoding), space-separated.
func webhookSignature(t *testing.T, id string, at time.Time, body []byte, secrets ...string) string {
	t.Helper()
	var sigs []string
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil {
			t.Fatal(err)
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id + "." + strconv.FormatInt(at.Unix(), 10) + "."))
		m.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(sigs, " ")
}

// webhookBody is an event's body as the gateway writes it: compact JSON of
// type, timestamp, whose it is (the demo's company A, LIVE) and the
// resource.
func webhookBody(t *testing.T, typ string, at time.Time, data []byte) []byte {
	t.Helper()
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		t.Fatal(err)
	}
	return []byte(`{"type":"` + typ + `","timestamp":"` + at.UTC().Format("2006-01-02T15:04:05.000Z") +
		`","companyId":"` + gendata.DemoCompanyA + `","mode":"LIVE","data":` + compact.String() + `}`)
}

// freePort is a loopback port free a moment ago, for a receiver that takes
// its port from PORT.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startReceiver runs cmd, a receiver listening on port, in a process group
// of its own (tsx and go run start children), ended with the test, and
// waits until it accepts connections. It returns its output.
func startReceiver(t *testing.T, cmd *exec.Cmd, port int) *testenv.SyncBuffer {
	t.Helper()
	out := &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(cmd.Env, "PORT="+strconv.Itoa(port), "PYTHONUNBUFFERED=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the receiver: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			c.Close()
			return out
		}
		select {
		case <-exited:
			t.Fatalf("the receiver exited:\n%s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver does not listen on %d:\n%s", port, out.String())
		}
	}
}

// deliverToReceiver sends the receiver on port (which knows secret) the
// gateway's deliveries of invoice.paid and client.updated, with inv and cl
// as their data, and what it must refuse; it returns the invoice's and the
// client's event lines the receiver printed, once it printed the client's
// (the last one accepted).
func deliverToReceiver(t *testing.T, port int, out *testenv.SyncBuffer, secret string, inv, cl []byte) []string {
	t.Helper()
	now := time.Now()
	rotated := webhookSecret(t)
	invID, clID := webhookEventID(t), webhookEventID(t)
	invBody := webhookBody(t, "invoice.paid", now, inv)
	clBody := webhookBody(t, "client.updated", now, cl)
	altered := bytes.Replace(invBody, []byte(`"invoice.paid"`), []byte(`"invoice.cancelled"`), 1)
	steps := []struct {
		name    string
		id      string
		at      time.Time
		body    []byte
		signed  []byte // the body the signature is of
		secrets []string
		ok      bool
	}{
		{"signed during a rotation, the receiver's secret second", invID, now, invBody, invBody, []string{rotated, secret}, true},
		{"the same event again, a later attempt", invID, now.Add(time.Second), invBody, invBody, []string{secret}, true},
		{"an altered body", webhookEventID(t), now, altered, invBody, []string{secret}, false},
		{"another endpoint's secret", webhookEventID(t), now, clBody, clBody, []string{rotated}, false},
		{"sent 10 minutes ago: a replay", webhookEventID(t), now.Add(-10 * time.Minute), clBody, clBody, []string{secret}, false},
		{"not signed", webhookEventID(t), now, clBody, clBody, nil, false},
		{"a client event", clID, now, clBody, clBody, []string{secret}, true},
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/webhooks/invoicing"
	for _, s := range steps {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(s.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "invoicing-gateway-webhooks/1.0")
		req.Header.Set("webhook-id", s.id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(s.at.Unix(), 10))
		if s.secrets != nil {
			req.Header.Set("webhook-signature", webhookSignature(t, s.id, s.at, s.signed, s.secrets...))
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v\n%s", s.name, err, out.String())
		}
		res.Body.Close()
		if got := res.StatusCode >= 200 && res.StatusCode < 300; got != s.ok || (!s.ok && res.StatusCode != http.StatusBadRequest) {
			t.Errorf("%s: answered %d", s.name, res.StatusCode)
		}
	}
	// Events are processed after the answer: wait for the last one's line.
	waitPrinted(t, out, regexp.MustCompile(`client\.updated `), "the receiver's client.updated line")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasPrefix(l, "invoice.") || strings.HasPrefix(l, "client.") {
			lines = append(lines, l)
		}
	}
	return lines
}

// demoResource is a resource as the demo answers GET path with key.
func demoResource(t *testing.T, base, key, company, path string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("X-Company-Id", company)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(res.Body); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", path, res.StatusCode, err)
	}
	return b.Bytes()
}

// demoInvoiceAndClient are a paid invoice (the data of invoice.paid) and a
// client of the demo's company, as Get invoice and Get client answer them.
func demoInvoiceAndClient(t *testing.T, base, key, company string) (inv, cl []byte) {
	t.Helper()
	first := func(list string) string {
		var p struct{ Data []struct{ ID string } }
		if err := json.Unmarshal(demoResource(t, base, key, company, list), &p); err != nil || len(p.Data) == 0 {
			t.Fatalf("%s: %v", list, err)
		}
		return p.Data[0].ID
	}
	inv = demoResource(t, base, key, company, "/api/v1/v1/invoices/"+first("/api/v1/v1/invoices?status=PAID&pageSize=1"))
	cl = demoResource(t, base, key, company, "/api/v1/v1/clients/"+first("/api/v1/v1/clients?pageSize=1"))
	return inv, cl
}
