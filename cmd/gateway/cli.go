package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
)

// command is one command of the command line, as the table in commands.go
// declares it: its words, its help, what it connects to, its own flags and
// what it does. Parsing, -h/--help, usage errors, --config and the exit
// codes are the same for all (runCommand), so a new command or flag is one
// entry or one line of an entry.
type command struct {
	name     string       // the words after "gateway": "keys create"
	synopsis string       // the usage line after the name: "--company ID [--json]"
	summary  string       // what it does, one sentence
	detail   string       // more, for its help; may be empty
	example  string       // a command line that works as written
	args     []string     // names of its positional arguments, all required
	required []string     // flags it cannot run without
	needs    config.Needs // what it connects to: which settings it requires
	// aliases are old names of its flags, still read but not shown: old
	// name → name.
	aliases map[string]string
	// flags registers the command's own flags and returns what runs once
	// they are parsed; the action reads them through the closure.
	flags func(fs *flag.FlagSet) action
}

// action runs a parsed command.
type action func(ctx context.Context, c *invocation) error

// invocation is one run of a command: where it writes, its environment, its
// positional arguments and where its configuration comes from.
type invocation struct {
	cmd            *command
	stdout, stderr io.Writer
	env            func(string) string
	args           []string
	configFlag     string // --config, when given
}

// usageError is a command line that cannot run as given: exit 2 with the
// command's usage line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// usageLine is the command's one line of usage.
func (c *command) usageLine() string {
	parts := []string{"gateway", c.name}
	if c.synopsis != "" {
		parts = append(parts, c.synopsis)
	}
	if c.needs != 0 {
		parts = append(parts, "[--config FILE]")
	}
	return strings.Join(parts, " ")
}

// newFlagSet makes the command's flag set; it prints nothing itself.
func (c *command) newFlagSet() (*flag.FlagSet, action, *string) {
	fs := flag.NewFlagSet("gateway "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var act action
	if c.flags != nil {
		act = c.flags(fs)
	}
	var cfg *string
	if c.needs != 0 {
		cfg = fs.String("config", "", "read the configuration from `FILE` (default: $"+config.EnvVar+", else ./"+config.File+")")
	}
	return fs, act, cfg
}

// runCommand parses args for c and runs it; it returns the exit code: 0 on
// success and for -h/--help, 2 for a command line that cannot run, 1 when
// the command itself fails.
func runCommand(ctx context.Context, c *command, args []string, stdout, stderr io.Writer, env func(string) string) int {
	fs, act, cfg := c.newFlagSet()
	pos, err := parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.help(stdout, fs)
		return 0
	}
	if err == nil {
		err = c.check(fs, pos)
	}
	if err == nil {
		cl := &invocation{cmd: c, stdout: stdout, stderr: stderr, env: env, args: pos}
		if cfg != nil {
			cl.configFlag = *cfg
		}
		err = act(ctx, cl)
	}
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "gateway %s: %s\nusage: %s\n", c.name, ue.msg, c.usageLine())
		return 2
	}
	fmt.Fprintf(stderr, "gateway: %s\n", message(err))
	return 1
}

// check refuses missing required flags and the wrong number of arguments.
func (c *command) check(fs *flag.FlagSet, pos []string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		set[f.Name] = true
		if name, ok := c.aliases[f.Name]; ok {
			set[name] = true
		}
	})
	var missing []string
	for _, name := range c.required {
		if !set[name] {
			missing = append(missing, "--"+name)
		}
	}
	if len(missing) > 0 {
		return usagef("needs %s", strings.Join(missing, ", "))
	}
	switch {
	case len(pos) < len(c.args):
		return usagef("needs %s", strings.Join(c.args[len(pos):], " "))
	case len(pos) > len(c.args):
		return usagef("unexpected argument %q", pos[len(c.args)])
	}
	return nil
}

// help prints the command's help: usage, what it does, its own flags, an
// example.
func (c *command) help(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", c.usageLine(), c.summary)
	if c.detail != "" {
		fmt.Fprintf(w, "\n%s\n", c.detail)
	}
	var n int
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(w, "\nFlags:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fs.VisitAll(func(f *flag.Flag) {
			if _, old := c.aliases[f.Name]; old {
				return
			}
			kind, usage := flag.UnquoteUsage(f)
			name := "--" + f.Name
			if kind != "" {
				name += " " + kind
			}
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
				usage += " (default " + f.DefValue + ")"
			}
			if slices.Contains(c.required, f.Name) {
				usage += " (required)"
			}
			fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
		})
		_ = tw.Flush()
	}
	fmt.Fprintf(w, "\nExample:\n  %s\n", c.example)
}

// parseFlags parses fs from args, allowing flags after positional arguments
// ("keys revoke KEY_ID --json"), and returns the positional ones. "--" ends
// the flags.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// plural is n and what it counts, in the singular for 1 ("1 failed
// delivery", "3 failed deliveries", "1,204 seconds").
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return group(int64(n)) + " " + many
}

// group writes n with a comma between groups of three digits.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// article is "an" before a word said with a vowel first (an invoice.paid
// change), else "a" (a client.created change).
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an"
	}
	return "a"
}
