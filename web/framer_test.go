package web

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// follow feeds stream to a framer in pieces of size n (0: whole) and
// returns the heads it found and whether it still follows the stream.
func follow(stream string, n int) ([]head, bool) {
	var p framer
	var heads []head
	push := func(h head) { heads = append(heads, h) }
	b := []byte(stream)
	for len(b) > 0 {
		k := len(b)
		if n > 0 {
			k = min(n, len(b))
		}
		p.feed(b[:k], push)
		b = b[k:]
	}
	return heads, p.st != sLost
}

// goRequests is what net/http reads of stream, request after request, each
// body read to its end, until it refuses something.
func goRequests(stream string) []*http.Request {
	br := bufio.NewReader(strings.NewReader(stream))
	var out []*http.Request
	for {
		if c := leadingCRLF(br); c > 0 {
			_, _ = br.Discard(c)
		}
		r, err := http.ReadRequest(br)
		if err != nil {
			return out
		}
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return out
		}
		out = append(out, r)
	}
}

// leadingCRLF counts the CR and LF before a request, which the framer skips
// (net/http's server skips them after a POST, and refuses them otherwise:
// either way, no request is read differently).
func leadingCRLF(br *bufio.Reader) int {
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if err != nil || (b[n-1] != '\r' && b[n-1] != '\n') {
			return n - 1
		}
	}
}

// Each head is found where net/http finds it, whatever the bodies hold
// (heads inside them included) and however the bytes are split across
// reads; an ambiguous head is marked, once, and nothing else is.
func TestFramerFollowsRequests(t *testing.T) {
	const get = "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
	smuggled := "POST /api/v1/v1/clients HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
	for _, c := range []struct {
		name   string
		stream string
		want   []framing // per request
		lost   bool
	}{
		{"two GETs", get + get, []framing{framingClear, framingClear}, false},
		{"a body holding a head", "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: " + strconv.Itoa(len(smuggled)) + "\r\n\r\n" + smuggled + get,
			[]framing{framingClear, framingClear}, false},
		{"chunks, extensions, trailer", "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"5;ext=\"x\"\r\nhello\r\n" + "1B\r\n" + smuggled[:27] + "\r\n0\r\nX-Trailer: 1\r\n\r\n" + get,
			[]framing{framingClear, framingClear}, false},
		{"both lengths", smuggled + "0\r\n\r\n" + get, []framing{framingBoth, framingClear}, false},
		{"both, length first, any case", "POST /a HTTP/1.1\r\nhost: a\r\ncontent-LENGTH: 3\r\nTRANSFER-ENCODING: Chunked\r\n\r\n0\r\n\r\n" + get,
			[]framing{framingBoth, framingClear}, false},
		{"both, encoding folded", "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + get,
			[]framing{framingBoth, framingClear}, false},
		{"bare LFs", "POST /a HTTP/1.1\nHost: a\nContent-Length: 2\nTransfer-Encoding: chunked\n\n0\r\n\r\n" + get,
			[]framing{framingBoth, framingClear}, false},
		{"HTTP/1.0 with an encoding", "POST /a HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\nhi" + get,
			[]framing{framingHTTP10TE, framingClear}, false},
		{"a length twice, the same", "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length:  2 \r\n\r\nhi" + get,
			[]framing{framingClear, framingClear}, false},
		{"lengths that differ", "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nhi" + get, []framing{framingClear}, true},
		{"an encoding net/http refuses", "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + get, []framing{framingClear}, true},
		{"a length without a colon", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length 5\r\n\r\nhello" + get, nil, true},
		{"HTTP/2", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", nil, true},
	} {
		for _, n := range []int{0, 1, 2, 3, 7, 64} {
			heads, following := follow(c.stream, n)
			var got []framing
			for _, h := range heads {
				got = append(got, h.f)
			}
			if !equalFramings(got, c.want) || following == c.lost {
				t.Errorf("%s, in pieces of %d: heads %v (following: %v), want %v (lost: %v)", c.name, n, got, following, c.want, c.lost)
			}
			reqs := goRequests(c.stream)
			for i := range min(len(heads), len(reqs)) {
				if heads[i].key != hashRequest(reqs[i].Method, reqs[i].RequestURI) {
					t.Errorf("%s: head %d is not net/http's %s %s", c.name, i, reqs[i].Method, reqs[i].RequestURI)
				}
			}
		}
	}
}

func equalFramings(a, b []framing) bool { return bytes.Equal(fbytes(a), fbytes(b)) }

func fbytes(fs []framing) []byte {
	b := make([]byte, len(fs))
	for i, f := range fs {
		b[i] = byte(f)
	}
	return b
}

// FuzzFramer: on any bytes, the heads the framer finds are those net/http
// reads, in order, as long as both follow the stream; and while the framer
// follows, it misses none.
func FuzzFramer(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nT: 1\r\n\r\nGET /c HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /a HTTP/1.0\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\nxGET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
	} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, stream string, n int) {
		heads, following := follow(stream, max(n%97, 0))
		reqs := goRequests(stream)
		for i := range min(len(heads), len(reqs)) {
			if heads[i].key != hashRequest(reqs[i].Method, reqs[i].RequestURI) {
				t.Fatalf("head %d is not net/http's %s %s", i, reqs[i].Method, reqs[i].RequestURI)
			}
		}
		if following && len(heads) < len(reqs) {
			t.Fatalf("%d heads found, net/http read %d requests", len(heads), len(reqs))
		}
	})
}

// BenchmarkFramer: the cost of following a typical API request's head
// (the Go client's headers, a key, a company id), per request.
func BenchmarkFramer(b *testing.B) {
	raw := []byte("GET /api/v1/v1/invoices?pageSize=20&status=ISSUED HTTP/1.1\r\nHost: api.example.ao\r\nUser-Agent: Go-http-client/1.1\r\n" +
		"Authorization: Bearer igw_live_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG012345\r\nX-Company-Id: 0a5e7c1e-0000-4000-8000-00000000000a\r\n" +
		"Accept-Encoding: gzip\r\n\r\n")
	var p framer
	n := 0
	push := func(head) { n++ }
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		p.feed(raw, push)
	}
	if n == 0 {
		b.Fatal("no head")
	}
}
