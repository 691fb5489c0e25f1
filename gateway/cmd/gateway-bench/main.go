// Command gateway-bench loads a running gateway: it drives the public API
// with a realistic mix of its operations across many companies and keys, and
// prints throughput, latency percentiles per operation and status counts.
// That is its one job; it lives apart from the gateway so that the production
// binary links no load generator.
//
//	gateway-bench [--url URL --admin-url URL --admin-token T | --keys-file F] [--company IDS] [--companies N --database URL] [--mix OP] [--rate N] [--connections N] [--duration D] [--ceiling]
//
// Run gateway-bench --help for every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

const usage = `gateway-bench: load a running gateway and print throughput and latencies.

Usage:
  gateway-bench [--url URL --admin-url URL --admin-token T | --keys-file F] [--company IDS] [--companies N --database URL] [--mix OP] [--rate N] [--connections N] [--duration D] [--ceiling]

Flags:
`

// errUsage marks a mistake in the command line (exit status 2).
var errUsage = errors.New("usage")

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// run runs the command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) int {
	err := cmdBench(ctx, args, stdout, stderr, env)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "gateway-bench: %v\nRun gateway-bench --help for the flags.\n", err)
		return 2
	}
	fmt.Fprintf(stderr, "gateway-bench: %v\n", err)
	return 1
}

// parseArgs parses the command line into fs; it takes no positional
// arguments.
func parseArgs(fs *flag.FlagSet, args []string) error {
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}
