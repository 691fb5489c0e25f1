package main

import (
	"flag"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/gateway"
)

// exampleCompany is the demo data's first company, in the examples: they
// work as written after `gateway data load --size small`.
const exampleCompany = gendata.DemoCompanyA

// commands is the command line, in the order the overview lists it. Each
// entry registers its own flags and returns its action; keys.go, limits.go,
// usage.go, data.go, serve.go and demo.go hold what they do.
var commands = []*command{
	{
		name: "serve", summary: "Run the gateway on real Redis and PostgreSQL (or SQLite).",
		detail:  "Starts whatever is down: a database or Redis that does not answer is logged with the cause and served as unavailable (503) until it answers.",
		example: "gateway serve --config configs/gateway.yaml",
		needs:   needAll,
		flags:   func(*flag.FlagSet) action { return cmdServe },
	},
	{
		name: "demo", synopsis: "[--data DIR]", summary: "Run the gateway on an in-process Redis and SQLite demo data: nothing to install.",
		detail:  "Prints ready keys and curl lines, then serves on :8080 (API) and 127.0.0.1:8081 (admin API). GATEWAY_* variables apply; no configuration file is read.",
		example: "gateway demo",
		flags:   demoFlags,
	},
	{
		name: "keys create", synopsis: "--company ID --mode LIVE|TEST --scopes LIST [--name TEXT] [--expires-in DURATION | --expires-at RFC3339] [--allow-cidr CIDR]... [--json|--quiet]",
		summary: "Create an API key for a company; its secret is shown this once.",
		example: "gateway keys create --company " + exampleCompany + " --mode TEST --scopes invoices:read,clients:read",
		needs:   needRedis | needLive, required: []string{"company", "mode", "scopes"},
		flags: keysCreateFlags,
	},
	{
		name: "keys list", synopsis: "--company ID [--json]", summary: "List a company's keys (a hint of each, never the secret).",
		example: "gateway keys list --company " + exampleCompany,
		needs:   needRedis, required: []string{"company"},
		flags: func(fs *flag.FlagSet) action { return keysList(companyFlag(fs), jsonFlag(fs)) },
	},
	{
		name: "keys roll", synopsis: "KEY_ID [--overlap DURATION] [--json]", args: []string{"KEY_ID"},
		summary: "Make a new key in a key's place; the old one keeps working for the overlap (24h by default), then expires.",
		detail:  "The new key has the same company, mode, scopes, name, networks and expiry. Works at 10 active keys; a key can be rolled once.",
		example: "gateway keys roll key_0123456789abcdef --overlap 48h",
		needs:   needRedis,
		flags:   keysRollFlags,
	},
	{
		name: "keys revoke", synopsis: "KEY_ID [--json]", args: []string{"KEY_ID"},
		summary: "Revoke a key: every gateway refuses it within a second.",
		example: "gateway keys revoke key_0123456789abcdef",
		needs:   needRedis,
		flags:   func(fs *flag.FlagSet) action { return keysRevoke(jsonFlag(fs)) },
	},
	{
		name: "limits get", synopsis: "--company ID [--json]", summary: "Show a company's LIVE and TEST rate limits.",
		example: "gateway limits get --company " + exampleCompany,
		needs:   needRedis, required: []string{"company"},
		flags: func(fs *flag.FlagSet) action { return limitsGet(companyFlag(fs), jsonFlag(fs)) },
	},
	{
		name: "limits set", synopsis: "--company ID [--mode LIVE|TEST] --rps N --burst N [--json]",
		summary: "Override a company's rate limit, live on every gateway.",
		example: "gateway limits set --company " + exampleCompany + " --mode LIVE --rps 100 --burst 200",
		needs:   needRedis, required: []string{"company", "rps", "burst"},
		flags: limitsSetFlags,
	},
	{
		name: "limits reset", synopsis: "--company ID [--json]", summary: "Put a company back on the default rate limits.",
		example: "gateway limits reset --company " + exampleCompany,
		needs:   needRedis, required: []string{"company"},
		flags: func(fs *flag.FlagSet) action { return limitsReset(companyFlag(fs), jsonFlag(fs)) },
	},
	{
		name: "usage", synopsis: "--company ID [--days N] [--json]",
		summary: "Show a company's requests per day (Luanda), by mode and status class.",
		detail:  "Counted by every gateway instance; the last second of a running instance may not be in yet.",
		example: "gateway usage --company " + exampleCompany + " --days 30",
		needs:   needRedis, required: []string{"company"},
		flags: func(fs *flag.FlagSet) action {
			return usageShow(companyFlag(fs), fs.Int("days", gateway.DefaultUsageDays, "show `N` days, today included"), jsonFlag(fs))
		},
	},
	{
		name: "audit", synopsis: "--company ID [--since TIME] [--json]",
		summary: "Show who created, rolled, revoked or saw expire a company's keys, and set or reset its limits, oldest first.",
		detail:  "Kept 400 days. The actor is the admin API's X-Actor, or user@host for this command line.",
		example: "gateway audit --company " + exampleCompany + " --since 7d",
		needs:   needRedis, required: []string{"company"},
		flags: auditFlags,
	},
	{
		name: "data schema", synopsis: "[--database URL]", summary: "Load the platform schema into the configured live and sandbox databases (new databases only).",
		example: "gateway data schema",
		needs:   needDatabases,
		flags:   func(fs *flag.FlagSet) action { return dataSchema(databaseFlag(fs)) },
	},
	{
		name: "data load", synopsis: "[--size small|large] [--database URL] [--seed N]",
		summary: "Load generated data: the demo's small set into both databases, or the platform-scale set into one.",
		detail:  "small: three companies (A, B active; S suspended) with clients and invoices, in the live and the sandbox database. large: one PostgreSQL database (--database) with 1,000,000 documents of one company and 1,000 smaller companies.",
		example: "gateway data load --size small",
		needs:   needDatabases,
		flags:   dataLoadFlags,
	},
	{
		name: "probe", synopsis: "URL", args: []string{"URL"},
		summary: "Exit 0 if URL answers 200: the health check of containers, which have no shell or curl.",
		example: "gateway probe http://127.0.0.1:8080/readyz",
		flags:   func(*flag.FlagSet) action { return cmdProbe },
	},
	{
		name: "version", summary: "Print the version.", example: "gateway version",
		flags: func(*flag.FlagSet) action { return cmdVersion },
	},
}

func jsonFlag(fs *flag.FlagSet) *bool { return fs.Bool("json", false, "print JSON") }

func companyFlag(fs *flag.FlagSet) *string { return fs.String("company", "", "company `ID` (a UUID)") }

func databaseFlag(fs *flag.FlagSet) *string {
	return fs.String("database", "", "one database `URL` instead of the configured live and sandbox ones")
}
