// Command gateway-bench loads a running gateway: it drives the public API
// with a realistic mix of its operations across many companies and keys, and
// prints throughput, latency percentiles per operation and status counts
// (with --ceiling, also those of a bare service, for reference). That is its
// one job; it lives apart from the gateway so that the production binary
// links no load generator.
//
//	gateway-bench [--url URL --admin-url URL --admin-token T | --keys-file F] [--company IDS] [--companies N --database URL] [--mix OP] [--rate N] [--connections N] [--duration D] [--ceiling] [--whatifs N]
//	gateway-bench ... [--webhooks] [--changes N --database URL] [--drain-timeout D] [--pid PID]   (events under load: eventsrun.go)
//
// Run gateway-bench --help for every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

const usage = `gateway-bench: load a running gateway and print throughput and latencies.

Usage:
  gateway-bench [--url URL --admin-url URL --admin-token T | --keys-file F] [--company IDS] [--companies N --database URL] [--mix OP] [--rate N] [--connections N] [--duration D] [--ceiling] [--whatifs N]
  gateway-bench ... [--webhooks] [--changes N --database URL] [--drain-timeout D] [--pid PID]

Flags:
`

// errUsage marks a mistake in the command line (exit status 2).
var errUsage = errors.New("usage")

func main() {
	// Ctrl-C and SIGTERM end the run through its context, so that what it
	// made (keys, limits, webhook endpoints) is undone; a second one kills.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
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

// benchOptions are the command's flags.
type benchOptions struct {
	url, adminURL, adminToken string
	compareURL                string // with --ceiling: a second gateway (another build), in the same rounds
	comparePID                int
	keysFile, writeKeys       string
	database                  string
	companyList               string
	companies, keysPerCompany int
	mix                       string
	rate, connections         int
	duration, warmup          time.Duration
	raiseLimits               bool
	ceiling                   bool
	ceilingConns, rounds      int
	pid, redisPID             int
	serveCeiling              string // internal: serve the ceiling (ceiling.go)
	walkList, walkBy          string // walk.go
	pageSize, walkPages       int
	changesSince              time.Duration
	webhooks                  bool // webhooks.go
	receiverAddr              string
	changes, changesBatch     int // changes.go
	drainTimeout, drainQuiet  time.Duration
	whatIfs                   int // whatifs.go
	whatIfSince               string
}

// cmdBench prepares the companies and keys (bench.go), loads the gateway
// with the mix (load.go) and prints the report (report.go). With --ceiling it
// loads a bare service as well, for reference (ceiling.go).
func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) error {
	fs := flag.NewFlagSet("gateway-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o benchOptions
	o.define(fs, env)
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if o.serveCeiling != "" {
		return serveCeilingMain(ctx, o.serveCeiling, o.database, o.ceilingConns, stdout)
	}
	weights, err := mixWeights(o.mix)
	if err != nil {
		return err
	}
	if o.compareURL != "" && !o.ceiling {
		return fmt.Errorf("%w: --compare-url runs with --ceiling", errUsage)
	}
	if o.walkList != "" && o.walkList != "invoices" && o.walkList != "clients" {
		return fmt.Errorf("%w: --walk invoices or --walk clients", errUsage)
	}
	if o.ceiling && o.mix != "get-client" {
		return fmt.Errorf("%w: --ceiling serves get-client only; add --mix get-client", errUsage)
	}
	if err := o.checkEvents(); err != nil {
		return err
	}

	b := &bencher{o: o, out: stdout, http: &http.Client{Timeout: 30 * time.Second}}
	if o.walkList != "" {
		b.http = walkClient()
	}
	defer b.cleanup()
	if err := b.setup(ctx); err != nil {
		return err
	}
	if err := b.setupEvents(ctx); err != nil {
		return err
	}
	if o.walkList != "" {
		return b.walk(ctx, o.walkList)
	}
	if !o.ceiling {
		return b.measure(ctx, weights)
	}
	return b.measureWithCeiling(ctx, weights)
}

// define declares the command's flags on fs.
func (o *benchOptions) define(fs *flag.FlagSet, env func(string) string) {
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080", "base URL of the gateway's public API")
	fs.StringVar(&o.adminURL, "admin-url", "http://127.0.0.1:8081", "base URL of the admin API (to create keys and raise limits)")
	fs.StringVar(&o.adminToken, "admin-token", env("GATEWAY_ADMIN_TOKEN"), "admin token (default $GATEWAY_ADMIN_TOKEN)")
	fs.StringVar(&o.keysFile, "keys-file", "", "use these keys (lines: COMPANY_ID KEY) instead of creating them")
	fs.StringVar(&o.writeKeys, "write-keys", "", "save the created keys to this file (mode 0600) and keep them")
	fs.StringVar(&o.database, "database", env("GATEWAY_LIVE_DATABASE_URL"), "PostgreSQL URL to pick companies from, the ceiling's database, and where --changes are committed")
	fs.StringVar(&o.companyList, "company", "", "comma-separated company ids to load (before those picked from --database)")
	fs.IntVar(&o.companies, "companies", 0, "further active companies to pick from --database")
	fs.IntVar(&o.keysPerCompany, "keys-per-company", 1, "LIVE keys to create per company (at most 10)")
	fs.StringVar(&o.mix, "mix", "all", "all (the realistic mix), or one operation: "+opNames())
	fs.IntVar(&o.rate, "rate", 0, "requests per second; 0 means as fast as --connections allow")
	fs.IntVar(&o.connections, "connections", 64, "concurrent connections (and workers)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured duration")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured load before the measure (caches, connections)")
	fs.BoolVar(&o.raiseLimits, "raise-limits", false, "lift the companies' LIVE rate limit during the run (reset after)")
	fs.BoolVar(&o.ceiling, "ceiling", false, "then run the same load against a bare service on --database (get-client only)")
	fs.IntVar(&o.rounds, "rounds", 5, "with --ceiling: alternate gateway and ceiling in this many slices of --duration/rounds")
	fs.StringVar(&o.compareURL, "compare-url", "", "with --ceiling: also load this gateway (another build, same Redis and database) in each round, to compare two builds on one machine")
	fs.IntVar(&o.comparePID, "compare-pid", 0, "the --compare-url gateway's process, for its CPU per request")
	fs.IntVar(&o.ceilingConns, "ceiling-db-conns", 10, "the bare service's database pool (the gateway's default)")
	fs.IntVar(&o.pid, "pid", 0, "the gateway's process: report its CPU per request and its resident memory after the run")
	fs.IntVar(&o.redisPID, "redis-pid", 0, "also report this process's (Redis's) CPU per request during each service's load")
	fs.StringVar(&o.walkList, "walk", "", "instead of the mix: walk every page of the first company's invoices or clients, one connection (walk.go)")
	fs.StringVar(&o.walkBy, "walk-by", "both", "with --walk: cursor, page (numbers) or both, one after the other")
	fs.IntVar(&o.pageSize, "page-size", 100, "with --walk: the page size")
	fs.IntVar(&o.walkPages, "walk-pages", 0, "with --walk: stop after this many pages (0: the whole list)")
	fs.DurationVar(&o.changesSince, "changes-since", 0, "with --walk: then ask for the first page of the changes since this long ago, for --duration")
	fs.BoolVar(&o.webhooks, "webhooks", false, "give each loaded company a LIVE webhook endpoint (admin API) to a receiver this tool runs on --receiver-addr, "+
		"then wait for the events after the load and count them; the gateway must run with eventsAllowHTTP: true and eventsAllowedNetworks: 127.0.0.0/8. "+
		"The endpoints are deleted at the end")
	fs.StringVar(&o.receiverAddr, "receiver-addr", "127.0.0.1:0", "with --webhooks: where the receiver listens (it answers 204 and verifies each signature)")
	fs.IntVar(&o.changes, "changes", 0, "during the load, commit this many changes in --database's loaded companies: pay issued documents (36.6 %), "+
		"change clients (20 %), create clients named \"Cliente de mudança N\" (the rest, and what the companies lack); they stay")
	fs.IntVar(&o.changesBatch, "changes-batch", 500, "with --changes: rows per transaction")
	fs.DurationVar(&o.drainTimeout, "drain-timeout", 10*time.Minute, "with --webhooks: the longest wait for the events after the load")
	fs.DurationVar(&o.drainQuiet, "drain-quiet", 30*time.Second, "with --webhooks: stop waiting when no event arrived for this long")
	fs.IntVar(&o.whatIfs, "whatifs", 0, "during the measured load, this many admin API clients ask what-ifs of the first company over --whatif-since, one after another")
	fs.StringVar(&o.whatIfSince, "whatif-since", "30d", "with --whatifs: the what-ifs' window (the admin API's since)")
	fs.StringVar(&o.serveCeiling, "serve-ceiling", "", "internal: serve the bare service on this address")
}

// measure loads the gateway alone and prints its report.
func (b *bencher) measure(ctx context.Context, weights []int) error {
	gwTarget := b.targeter(b.o.url, weights)
	gw := newBenchReport("gateway")
	gw.cpu.watch("gateway", b.o.pid)
	gw.cpu.watch("redis", b.o.redisPID)
	b.attack(ctx, gwTarget, b.o.warmup, nil)
	changed := b.startChanges(ctx)
	stopWhatIfs := b.startWhatIfs(ctx)
	b.attack(ctx, gwTarget, b.o.duration, gw)
	asked := stopWhatIfs()
	if ctx.Err() != nil {
		<-changed
		return ctx.Err()
	}
	gw.finish()
	gw.print(b.out)
	asked.print(b.out, b.o.whatIfs, b.o.whatIfSince)
	// With events, the drain follows the load, and the peak memory
	// reported is the whole run's, the drain's included.
	if err := b.afterLoad(ctx, changed); err != nil {
		return err
	}
	if b.o.pid > 0 {
		printRSS(b.out, b.o.pid)
	}
	fmt.Fprintf(b.out, "load average (1 min) at the end: %s\n", loadAverage())
	return b.failed
}

// measureWithCeiling loads the gateway and the bare service in turns (and a
// second gateway, --compare-url) and prints the reports and their ratios.
// The reference runs in the same command, in alternating slices, so that a
// change of the machine's load (other processes) hits all alike.
func (b *bencher) measureWithCeiling(ctx context.Context, weights []int) error {
	base, ceilingPID, stop, err := startCeiling(ctx, b.o.database, b.o.ceilingConns)
	if err != nil {
		return err
	}
	defer stop()
	type service struct {
		tg  vegeta.Targeter
		rep *benchReport
	}
	gw, ref := newBenchReport("gateway"), newBenchReport("ceiling")
	gw.cpu.watch("gateway", b.o.pid)
	ref.cpu.watch("ceiling", ceilingPID)
	services := []service{{b.targeter(b.o.url, weights), gw}}
	if b.o.compareURL != "" {
		cmp := newBenchReport("compared gateway (" + b.o.compareURL + ")")
		cmp.cpu.watch("compared gateway", b.o.comparePID)
		services = append(services, service{b.targeter(b.o.compareURL, weights), cmp})
	}
	services = append(services, service{b.targeter(base, weights), ref})
	fmt.Fprintf(b.out, "load average (1 min) at the start: %s\n", loadAverage())
	for _, s := range services {
		s.rep.cpu.watch("redis", b.o.redisPID)
		s.rep.cpu.watchAll()
		b.attack(ctx, s.tg, b.o.warmup, nil)
	}
	rounds := max(b.o.rounds, 1)
	for i := 0; i < rounds && ctx.Err() == nil; i++ {
		for _, s := range services {
			b.attack(ctx, s.tg, b.o.duration/time.Duration(rounds), s.rep)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for _, s := range services {
		s.rep.finish()
		s.rep.print(b.out)
		if s.rep == gw && b.o.pid > 0 {
			printRSS(b.out, b.o.pid)
		}
	}
	if ref.throughput > 0 {
		fmt.Fprintln(b.out)
		for _, s := range services[:len(services)-1] {
			fmt.Fprintf(b.out, "%s / ceiling throughput: %.1f%% (%d alternating rounds)\n", s.rep.name, 100*s.rep.throughput/ref.throughput, rounds)
		}
	}
	fmt.Fprintf(b.out, "load average (1 min) at the end: %s\n", loadAverage())
	return nil
}
