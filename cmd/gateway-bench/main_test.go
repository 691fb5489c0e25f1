package main

import (
	"context"
	"strings"
	"testing"
)

// --help shows the flags and succeeds; a bad command line is refused with
// exit status 2 before anything is loaded.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, 0, "-keys-per-company"},
		{[]string{"--mix", "frobnicate"}, 2, "--mix must be all or one of"},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--no-such-flag"}, 2, "flag provided but not defined"},
		{[]string{"--ceiling"}, 2, "--ceiling serves get-client only"},
		{[]string{"--compare-url", "http://127.0.0.1:1"}, 2, "--compare-url runs with --ceiling"},
		{[]string{"--company", "x"}, 2, "creating keys needs --admin-token"},
	} {
		var out, errb strings.Builder
		code := run(context.Background(), c.args, &out, &errb, noEnv)
		if code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errb.String(), c.code, c.want)
		}
	}
}

// Each operation's requests are reported under its name, the list targets'
// apart from the mix's filters and deep pages.
func TestOpOf(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"/invoices?page=1&pageSize=20":                  "list-invoices",
		"/invoices?page=1&pageSize=20&status=OVERDUE":   "list-invoices-filter",
		"/invoices?status=OVERDUE&page=1&pageSize=20":   "list-invoices-overdue",
		"/invoices?page=2000&pageSize=20":               "list-invoices-page2000",
		"/invoices?pageSize=100&page=2000":              "list-invoices-deep",
		"/clients/00000000-0000-4000-8000-000000000000": "get-client",
		"/clients?page=1&pageSize=20&search=mari":       "list-clients",
		"/clients?search=mari&page=1&pageSize=20":       "search-clients",
	} {
		if got := opOf("GET", "http://gw"+apiBase+path); got != want {
			t.Errorf("%s: %s, want %s", path, got, want)
		}
	}
}

// --webhooks and --changes are refused where they do not fit, before
// anything is made.
func TestEventsCommandLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--changes", "-1"}, "--changes must be 0 or more"},
		{[]string{"--webhooks", "--walk", "invoices"}, "not with --ceiling or --walk"},
		{[]string{"--changes", "10", "--mix", "get-client", "--ceiling"}, "not with --ceiling or --walk"},
		{[]string{"--changes", "10"}, "--changes needs --database"},
		{[]string{"--webhooks", "--company", "x"}, "--webhooks needs --admin-token"},
		{[]string{"--changes", "10", "--database", "postgres://x", "--changes-batch", "0"}, "--changes-batch must be 1 or more"},
		{[]string{"--webhooks", "--admin-token", "t", "--drain-timeout", "0s"}, "--drain-timeout and --drain-quiet must be positive"},
	} {
		var out, errb strings.Builder
		code := run(context.Background(), c.args, &out, &errb, noEnv)
		if code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
}
