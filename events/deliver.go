package events

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// userAgent names the sender to receivers and their logs.
const userAgent = "invoicing-gateway-webhooks/1.0"

// responseKept is how much of an answer the delivery log keeps: enough to
// see an error page's title or a JSON error, never a whole page.
const responseKept = 256

// maxAnswerHead bounds the status line and headers of a receiver's answer,
// as responseKept and the drain bound its body: net/http reads up to 10 MiB
// of headers by default, and slow receivers sending that much held the
// memory of every delivery in flight. A receiver needs a few hundred bytes.
const maxAnswerHead = 16 << 10

// newClient is the deliveries' HTTP client: no proxy from the environment,
// no redirects (a receiver that moved says so with a 3xx, which fails: a
// redirect could lead anywhere, and a POST is not to be replayed
// elsewhere), and a dialer that checks every address it connects to.
func (dp *dispatcher) newClient() *http.Client {
	dialer := &net.Dialer{Timeout: min(5*time.Second, dp.timeout), KeepAlive: 30 * time.Second, Control: dp.dest.control}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    min(5*time.Second, dp.timeout),
		ResponseHeaderTimeout:  dp.timeout,
		MaxResponseHeaderBytes: maxAnswerHead,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
	}
	return &http.Client{Transport: tr, Timeout: dp.timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// deliver makes one attempt: POST the event's body, signed with the
// endpoint's keys. Any 2xx is a success.
func (dp *dispatcher) deliver(ctx context.Context, client *http.Client, e *Webhook, ev *Event) (*Attempt, bool) {
	at := dp.now()
	a := &Attempt{At: at.UTC()}
	body, err := ev.body()
	if err != nil {
		a.Error, a.reason = "the event could not be encoded", reasonInternal
		return a, false
	}
	keys, err := dp.endpoints.signingKeys(e, at)
	if err != nil {
		a.Error, a.reason = err.Error(), reasonInternal
		return a, false
	}
	if len(keys) == 0 {
		a.Error, a.reason = "the endpoint has no signing secret", reasonInternal
		return a, false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		a.Error, a.reason = "the endpoint's URL is not usable", reasonInternal
		return a, false
	}
	h := req.Header
	h["Content-Type"] = []string{"application/json"}
	h["User-Agent"] = []string{userAgent}
	h["Webhook-Id"] = []string{ev.ID}
	h["Webhook-Timestamp"] = []string{strconv.FormatInt(at.Unix(), 10)}
	h["Webhook-Signature"] = []string{signature(keys, ev.ID, at, body)}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		a.Latency = ms(time.Since(start))
		a.Error, a.reason = describe(err, dp.timeout)
		return a, false
	}
	head := make([]byte, responseKept)
	n, _ := io.ReadFull(resp.Body, head)
	// Drain a little more so the connection can be reused; a receiver that
	// sends more is cut.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	a.Latency = ms(time.Since(start))
	a.Status = resp.StatusCode
	a.Response = printable(head[:n])
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		a.Error, a.reason = "answered "+strconv.Itoa(resp.StatusCode)+" "+http.StatusText(resp.StatusCode), reasonStatus
		return a, false
	}
	return a, true
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// describe says why an attempt got no answer, without the URL (it may hold
// a token of the receiver's) that net/http puts in its errors, and the
// reason the metrics count it under.
func describe(err error, timeout time.Duration) (string, int) {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "no answer within " + timeout.String(), reasonTimeout
	case strings.Contains(err.Error(), "response headers exceeded"): // net/http has no error value for it
		return "the receiver's answer has over " + strconv.Itoa(maxAnswerHead>>10) + " KiB of headers", reasonNetwork
	case errors.Is(err, ErrInvalidWebhook):
		return "refused to connect: " + strings.TrimPrefix(err.Error(), ErrInvalidWebhook.Error()+": "), reasonDestination
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the receiver closed the connection without answering", reasonNetwork
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: nothing listens at the endpoint's address and port", reasonNetwork
	case errors.Is(err, syscall.ECONNRESET):
		return "the receiver reset the connection without answering", reasonNetwork
	case errors.As(err, &dnsErr):
		return "the endpoint's host does not resolve (" + dnsErr.Err + ")", reasonNetwork
	case errors.As(err, &certErr):
		return "the receiver's TLS certificate is not trusted (" + certErr.Err.Error() + ")", reasonNetwork
	}
	return err.Error(), reasonNetwork
}

// printable keeps an answer's first bytes as valid UTF-8 text.
func printable(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
