// Command gateway runs the public API gateway of the invoicing platform and
// manages its keys, rate limits and data.
//
//	gateway serve                     production: real Redis and PostgreSQL
//	gateway demo                      embedded Redis and SQLite with demo data
//	gateway keys create|list|revoke   API keys
//	gateway limits get|set|reset      per-company rate limits
//	gateway usage --company ID        per-company requests per day
//	gateway data schema|load          platform schema and generated data
//	gateway probe URL                 health check for containers
//	gateway version
//
// Every command and subcommand has -h/--help; commands.go is the table of
// them, cli.go the parsing they share.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/durable"
	"github.com/invoicing-ao/gateway/internal/jsonlog"

	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	redis.SetLogger(redisLogger{}) // serve.go: go-redis's lines into the JSON log
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// run dispatches a command line and returns the process exit code: 0 done
// (or help asked for), 1 the command failed, 2 the command line is wrong.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) int {
	if len(args) == 0 {
		overview(stderr, "")
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 { // gateway help keys create
			return run(ctx, append(args[1:], "--help"), stdout, stderr, env)
		}
		overview(stdout, "")
		return 0
	case "--version", "-v":
		args[0] = "version"
	}
	if c := lookup(args); c != nil {
		return runCommand(ctx, c, args[len(strings.Fields(c.name)):], stdout, stderr, env)
	}
	if isGroup(args[0]) {
		if len(args) > 1 && (args[1] == "-h" || args[1] == "-help" || args[1] == "--help") {
			overview(stdout, args[0])
			return 0
		}
		if len(args) == 1 {
			fmt.Fprintf(stderr, "gateway %s: needs a command\n\n", args[0])
		} else {
			fmt.Fprintf(stderr, "gateway %s: unknown command %q\n\n", args[0], args[1])
		}
		overview(stderr, args[0])
		return 2
	}
	fmt.Fprintf(stderr, "gateway: unknown command %q (gateway --help lists them)\n", args[0])
	return 2
}

// lookup finds the command args start with: two words ("keys create") or one.
func lookup(args []string) *command {
	for _, c := range commands {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == c.name {
			return c
		}
	}
	return nil
}

// isGroup reports whether word starts two-word commands ("keys").
func isGroup(word string) bool {
	for _, c := range commands {
		if strings.HasPrefix(c.name, word+" ") {
			return true
		}
	}
	return false
}

// overview lists the commands (those of group, when not empty), each with
// what it does; each command's --help has its flags and an example.
func overview(w io.Writer, group string) {
	if group == "" {
		fmt.Fprint(w, "gateway: the public API gateway of the invoicing platform.\n\nUsage: gateway COMMAND [flags]\n\nCommands:\n")
	} else {
		fmt.Fprintf(w, "Usage: gateway %s COMMAND [flags]\n\nCommands:\n", group)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range commands {
		if group == "" || strings.HasPrefix(c.name, group+" ") {
			fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
		}
	}
	_ = tw.Flush()
	fmt.Fprint(w, `
A command's flags and an example: gateway COMMAND --help (gateway keys create --help).
Commands that connect read the configuration file given by --config, else
$GATEWAY_CONFIG, else ./configs/gateway.yaml, then the GATEWAY_* environment
variables, which win; see docs/operators.md.
`)
}

func cmdVersion(_ context.Context, c *invocation) error {
	_, err := fmt.Fprintln(c.stdout, "gateway", versionString())
	return err
}

// config loads the configuration the command needs (internal/config).
func (c *invocation) config() (config.Config, error) {
	return config.ForCommand(c.configFlag, c.env, c.cmd.needs)
}

// open connects what the command needs, quietly; a dependency that does not
// answer fails it, named with its cause (depError).
func (c *invocation) open(ctx context.Context) (*deps, error) {
	cfg, err := c.config()
	if err != nil {
		return nil, err
	}
	return connect(ctx, cfg, newLogger(c.stderr, "error"), only(c.cmd.needs))
}

// invoke is what a command that reads or changes the control plane does:
// open what it needs, run op on it, close it, and print op's result, as
// JSON with --json (asJSON), else as text writes it. When op fails, nothing
// is printed and its error is the command's.
func invoke[V any](ctx context.Context, c *invocation, asJSON bool, op func(context.Context, *deps) (V, error), text func(io.Writer, V) error) error {
	d, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer d.Close()
	v, err := op(ctx, d)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(c.stdout).Encode(v)
	}
	return text(c.stdout, v)
}

// message is what a person is told of err. A dependency's failure is told
// with its setting, address and own words; an error the API would answer
// with a 4xx is told as the API tells it ("No company ... exists"); anything
// else as it is: the API's 5xx text ("retry later") would hide the cause
// from the one person who can fix it.
func message(err error) string {
	var dep *depError
	if errors.As(err, &dep) {
		return dep.Error()
	}
	p := web.Problem(err)
	if p.Code == durable.ProblemCode { // one sentence: what happened, and what to do
		return p.Detail
	}
	if p.Code == "internal_error" || p.Status() >= 500 {
		if h := hint(err, ""); h != "" {
			return err.Error() + "\n(" + h + ")"
		}
		return err.Error()
	}
	msg := p.Detail
	for _, f := range p.Fields {
		if !strings.Contains(msg, f.Field+" "+f.Message) { // not said already
			msg += "\n  " + f.Field + ": " + f.Message
		}
	}
	return msg
}

// refusal is what an input refused must be ("must be from 1 to 100000"),
// for a command line or a setting that names its own flag or variable: the
// message of an invoicing.FieldError, else the error's text.
func refusal(err error) string {
	var fe *invoicing.FieldError
	if errors.As(err, &fe) {
		return fe.Message
	}
	return err.Error()
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

func newLogger(w io.Writer, level string) *slog.Logger {
	l, _ := config.ParseLevel(level)
	return slog.New(jsonlog.New(w, &slog.HandlerOptions{Level: l})) // slog's JSON lines, faster
}
