package events

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A delivery that got no answer says why in words an operator reads,
// never with the URL (it may hold the receiver's token).
func TestDescribe(t *testing.T) {
	t.Parallel()
	post := func(err error) error {
		return &url.Error{Op: "Post", URL: "https://hooks.example.com/w?token=s3cret", Err: err}
	}
	dial := func(errno syscall.Errno) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: errno}}
	}
	for _, c := range []struct {
		err    error
		want   string
		reason int
	}{
		{post(io.EOF), "the receiver closed the connection without answering", reasonNetwork},
		{post(io.ErrUnexpectedEOF), "the receiver closed the connection without answering", reasonNetwork},
		{post(dial(syscall.ECONNREFUSED)), "connection refused: nothing listens at the endpoint's address and port", reasonNetwork},
		{post(dial(syscall.ECONNRESET)), "the receiver reset the connection without answering", reasonNetwork},
		{post(&net.DNSError{Err: "no such host", Name: "hooks.example.com", Server: "10.0.0.53:53", IsNotFound: true}), "the endpoint's host does not resolve (no such host)", reasonNetwork},
		{post(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), "the receiver's TLS certificate is not trusted (x509: certificate signed by unknown authority)", reasonNetwork},
		{post(context.DeadlineExceeded), "no answer within 10s", reasonTimeout},
		{post(errors.New("something else")), "something else", reasonNetwork},
	} {
		got, reason := describe(c.err, 10*time.Second)
		if got != c.want || reason != c.reason {
			t.Errorf("describe(%v) = %q, %d; want %q, %d", c.err, got, reason, c.want, c.reason)
		}
		if strings.Contains(got, "s3cret") {
			t.Errorf("describe(%v) shows the URL", c.err)
		}
	}
}
