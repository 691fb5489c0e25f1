package harness

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/apitest"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// Resp is a decoded answer.
type Resp struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON is the answer's body, which must be a JSON object.
func (r Resp) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// Req describes one request; zero fields are left out. A Body is sent as
// JSON unless ContentType says otherwise.
type Req struct {
	Method, Path, Key, Company, ContentType string
	Body                                    string
	Header                                  map[string]string
}

// Do sends q to base and checks what every answer carries, and the public
// API's answers against the OpenAPI document (apitest.Check).
func Do(t *testing.T, base string, q Req) Resp {
	t.Helper()
	if q.Method == "" {
		q.Method = http.MethodGet
	}
	var body io.Reader
	if q.Body != "" {
		body = strings.NewReader(q.Body)
	}
	r, err := http.NewRequest(q.Method, base+q.Path, body)
	if err != nil {
		t.Fatal(err)
	}
	if q.Key != "" {
		r.Header.Set("Authorization", "Bearer "+q.Key)
	}
	if q.Company != "" {
		r.Header.Set("X-Company-Id", q.Company)
	}
	if q.ContentType != "" {
		r.Header.Set("Content-Type", q.ContentType)
	} else if q.Body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range q.Header {
		r.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := Resp{Status: res.StatusCode, Header: res.Header, Body: b}
	apitest.Check(t, apitest.Request{Method: q.Method, Path: q.Path}, apitest.Answer{Status: out.Status, Header: out.Header, Body: out.Body})
	return out
}

// ExpectProblem asserts the answer's status and problem code, and gives the
// problem.
func ExpectProblem(t *testing.T, r Resp, status int, code string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	m := r.JSON(t)
	if m["code"] != code {
		t.Fatalf("code %v, want %s: %s", m["code"], code, r.Body)
	}
	return m
}

// LogLine is the access log line of a request id in logs.
func LogLine(t *testing.T, logs *testenv.SyncBuffer, requestID string) map[string]any {
	t.Helper()
	for _, l := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" && m["requestId"] == requestID {
			return m
		}
	}
	t.Fatalf("no access log line for request %s", requestID)
	return nil
}

// DeadRedis is a client of a Redis that is not there.
func DeadRedis(t *testing.T) *redis.Client {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	testenv.QuietRedisLog(t, addr)
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
}
