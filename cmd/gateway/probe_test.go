package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestProbeCommand(t *testing.T) {
	t.Parallel()
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	probe := func(args ...string) int {
		return run(context.Background(), append([]string{"probe"}, args...), io.Discard, io.Discard, envOf(nil))
	}
	if code := probe(srv.URL + "/readyz"); code != 0 {
		t.Fatalf("probe of a 200: exit %d", code)
	}
	status = http.StatusServiceUnavailable
	if code := probe(srv.URL + "/readyz"); code != 1 {
		t.Fatalf("probe of a 503: exit %d, want 1", code)
	}
	if code := probe("/readyz"); code != 2 {
		t.Fatalf("probe without a host: exit %d, want 2", code)
	}
}
