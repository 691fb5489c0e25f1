package doctest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// gatewayCLI is the gateway's command line as the built binary's help
// tells it: `gateway --help` lists the commands, and each command's --help
// its usage line and flags.
type gatewayCLI struct {
	t        *testing.T
	commands map[string]gatewayCommand // by name: "keys create"
}

// gatewayCommand is one command of gateway's help.
type gatewayCommand struct {
	name     string
	usage    string          // its usage line, after "Usage: "
	args     []string        // its positional arguments, all required
	flags    map[string]bool // its flags: true for those that take a value
	required []string        // the flags it cannot run without
}

var (
	// overviewLine is a command of `gateway --help`: its name, two spaces,
	// what it does.
	overviewLine = regexp.MustCompile(`^  ([a-z][a-z-]*(?: [a-z][a-z-]*)?)  +\S`)
	// helpFlag is a flag of a command's --help: its name, the name of its
	// value when it takes one, two spaces, what it does.
	helpFlag = regexp.MustCompile(`^  --([a-z0-9-]+)(?: (\S+))?  +(.*)$`)
)

// gatewayCLIOf builds the gateway and reads its help: its own command
// table, not a copy that could drift.
func gatewayCLIOf(t *testing.T) gatewayCLI {
	t.Helper()
	code, out, errs := runGateway(t, nil, "--help")
	if code != 0 {
		t.Fatalf("gateway --help: exit %d: %s", code, errs)
	}
	cli := gatewayCLI{t: t, commands: map[string]gatewayCommand{}}
	_, list, _ := strings.Cut(out, "\nCommands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	for _, line := range strings.Split(list, "\n") {
		m := overviewLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("gateway --help: %q is not a command and what it does", line)
		}
		cli.commands[m[1]] = commandHelp(t, m[1])
	}
	if len(cli.commands) < 20 || cli.commands["keys create"].name == "" {
		t.Fatalf("gateway --help no longer reads as expected (%d commands):\n%s", len(cli.commands), out)
	}
	return cli
}

// commandHelp reads `gateway NAME --help`.
func commandHelp(t *testing.T, name string) gatewayCommand {
	t.Helper()
	code, out, errs := runGateway(t, nil, append(strings.Fields(name), "--help")...)
	if code != 0 {
		t.Fatalf("gateway %s --help: exit %d: %s", name, code, errs)
	}
	c := gatewayCommand{name: name, flags: map[string]bool{}}
	lines := strings.Split(out, "\n")
	usage, ok := strings.CutPrefix(lines[0], "Usage: ")
	if !ok || !strings.HasPrefix(usage, "gateway "+name) {
		t.Fatalf("gateway %s --help starts %q, not its usage", name, lines[0])
	}
	c.usage = usage
	for _, w := range strings.Fields(strings.TrimPrefix(usage, "gateway "+name)) {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[") {
			break
		}
		c.args = append(c.args, w)
	}
	flags := false
	for _, line := range lines[1:] {
		switch {
		case line == "Flags:":
			flags = true
		case line == "":
			flags = false
		case flags:
			m := helpFlag.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("gateway %s --help: %q is not a flag", name, line)
			}
			c.flags[m[1]] = m[2] != ""
			if strings.HasSuffix(m[3], "(required)") {
				c.required = append(c.required, m[1])
			}
		}
	}
	return c
}

// lookup is the command words start with: two words ("keys create") or one.
func (cli gatewayCLI) lookup(words []string) (gatewayCommand, bool) {
	for n := min(2, len(words)); n > 0; n-- {
		if c, ok := cli.commands[strings.Join(words[:n], " ")]; ok {
			return c, true
		}
	}
	return gatewayCommand{}, false
}

// check reads a gateway command line shown in a document: a synopsis (a
// line with [ or |) is its command's usage line, with or without [--config
// FILE]; any other line is one the binary parses (its flags and their
// values, asked with --help at the end, which stops it before it runs), with
// the flags its command requires and as many arguments as it takes.
func (cli gatewayCLI) check(t *testing.T, line string) error {
	t.Helper()
	words := strings.Fields(line)[1:]
	c, ok := cli.lookup(words)
	if !ok {
		return fmt.Errorf("no such command")
	}
	if strings.ContainsAny(line, "[|") {
		if line != c.usage && line != strings.TrimSuffix(c.usage, " [--config FILE]") {
			return fmt.Errorf("synopsis\n\t%s\nis not the command's usage line\n\t%s", line, c.usage)
		}
		return nil
	}
	rest := words[len(strings.Fields(c.name)):]
	set, pos, err := c.parse(rest)
	if err != nil {
		return err
	}
	// The binary's own parse: --help after the flags (before a "--") stops
	// it before any check of its own, and a flag it does not know or a value
	// of the wrong type is exit 2 first.
	at := slices.Index(words, "--")
	if at < 0 {
		at = len(words)
	}
	asked := slices.Insert(slices.Clone(words), at, "--help")
	if code, _, errs := runGateway(t, nil, asked...); code != 0 {
		return fmt.Errorf("does not parse: exit %d: %s", code, errs)
	}
	var missing []string
	for _, name := range c.required {
		if _, ok := set[name]; !ok {
			missing = append(missing, "--"+name)
		}
	}
	switch {
	case len(missing) > 0:
		return fmt.Errorf("needs %s", strings.Join(missing, ", "))
	case len(pos) != len(c.args):
		return fmt.Errorf("%d arguments, the command takes %d (%s)", len(pos), len(c.args), strings.Join(c.args, " "))
	}
	return nil
}

// parse splits args as the binary does: flags anywhere, a flag's value in
// the next word unless it is given after =, "--" ending the flags. It
// returns the flags set, with their values, and the positional arguments.
func (c gatewayCommand) parse(args []string) (set map[string]string, pos []string, err error) {
	set = map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return set, append(pos, args[i+1:]...), nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takes, ok := c.flags[name]
		if !ok {
			return nil, nil, fmt.Errorf("flag provided but not defined: -%s", name)
		}
		if takes && !hasValue {
			if i+1 == len(args) {
				return nil, nil, fmt.Errorf("flag needs an argument: -%s", name)
			}
			i++
			value = args[i]
		}
		set[name] = value
	}
	return set, pos, nil
}
