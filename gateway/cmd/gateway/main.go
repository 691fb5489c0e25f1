// Command gateway runs the public API gateway of the invoicing platform and
// manages its keys and rate limits.
//
//	gateway serve [--config FILE]     production: real Redis and PostgreSQL
//	gateway demo                      embedded Redis and SQLite with demo data
//	gateway keys create|list|roll|revoke   API keys
//	gateway limits get|set|reset      per-company rate limits
//	gateway audit --company ID        who changed which key or limit
//	gateway usage --company ID        per-company requests per day
//	gateway data schema|load          platform schema and generated data
//	gateway probe URL                 health check for containers
//	gateway version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/invoicing-ao/gateway/internal/jsonlog"

	"github.com/invoicing-ao/gateway/gateway"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `gateway: the public API gateway of the invoicing platform.

Usage:
  gateway serve [--config FILE]       run with real Redis and PostgreSQL
  gateway demo                        run on embedded Redis and SQLite with demo data
  gateway keys create --company ID --mode LIVE|TEST --scopes LIST [--name TEXT]
                      [--expires-in DURATION | --expires-at RFC3339] [--allow-cidr CIDR]... [--json]
  gateway keys list --company ID [--json]
  gateway keys roll KEY_ID [--overlap DURATION] [--json]   new secret; the old one works for the overlap (24h)
  gateway keys revoke KEY_ID
  gateway audit --company ID [--since TIME] [--json]       key and limit changes, oldest first
  gateway limits get --company ID [--json]
  gateway limits set --company ID [--mode LIVE|TEST] --rps N --burst N
  gateway limits reset --company ID
  gateway usage --company ID [--days N] [--json]   requests per day by status class
  gateway data schema --database URL
  gateway data load --size small|large [--database URL] [--seed N]
  gateway probe URL                   exit 0 if URL answers 200 (container health checks)
  gateway version

Every command that connects reads configs/gateway.yaml (or --config FILE) and
the GATEWAY_* environment variables; see README.md.
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// run dispatches a command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = cmdServe(ctx, args[1:], stdout, stderr, env)
	case "demo":
		err = cmdDemo(ctx, args[1:], stdout, stderr, env)
	case "keys":
		err = cmdKeys(ctx, args[1:], stdout, stderr, env)
	case "limits":
		err = cmdLimits(ctx, args[1:], stdout, stderr, env)
	case "usage":
		err = cmdUsage(ctx, args[1:], stdout, stderr, env)
	case "audit":
		err = cmdAudit(ctx, args[1:], stdout, stderr, env)
	case "data":
		err = cmdData(ctx, args[1:], stdout, stderr, env)
	case "probe":
		err = cmdProbe(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "gateway", versionString())
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "gateway: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		if errors.Is(err, errUsage) {
			fmt.Fprintf(stderr, "gateway: %v\n\n%s", err, usage)
			return 2
		}
		fmt.Fprintf(stderr, "gateway: %s\n", message(err))
		return 1
	}
	return 0
}

// message is what a person is told of err: what the API would say of it, or
// the error itself when the API would only say "internal error".
func message(err error) string {
	p := gateway.Problem(err)
	if p.Code == "internal_error" {
		return err.Error()
	}
	msg := p.Detail
	for _, f := range p.Fields {
		msg += "\n  " + f.Field + ": " + f.Message
	}
	return msg
}

func versionString() string {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " (" + s.Value[:12] + ")"
			}
		}
		v += " " + bi.GoVersion
	}
	return v
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return 0, fmt.Errorf("%q is not one of debug, info, warn, error", s)
	}
	return l, nil
}

func newLogger(w io.Writer, level string) *slog.Logger {
	l, _ := parseLevel(level)
	return slog.New(jsonlog.New(w, &slog.HandlerOptions{Level: l})) // slog's JSON lines, faster
}

// parseFlags parses fs from args, allowing flags after positional arguments
// ("keys revoke KEY_ID --json"), and returns the positional ones.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
