package main

import (
	"flag"
	"strings"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
)

// exampleCompany is the demo data's first company, in the examples: they
// work as written after `gateway data load --size small`.
const exampleCompany = gendata.DemoCompanyA

// commands is the command line, in the order the overview lists it. Each
// entry registers its own flags and returns its action; keys.go, limits.go,
// usage.go, data.go, historycli.go, serve.go and demo.go hold what they do.
var commands = []*command{
	{
		name: "serve", summary: "Run the gateway on real Redis and PostgreSQL (or SQLite).",
		detail:  "Starts whatever is down: a database or Redis that does not answer is logged with the cause and served as unavailable (503) until it answers.",
		example: "gateway serve --config configs/gateway.yaml",
		needs:   config.NeedAll,
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
		needs:   config.NeedRedis | config.NeedLive | config.NeedHistory, required: []string{"company", "mode", "scopes"},
		flags: keysCreateFlags,
	},
	byCompany("keys list", "List a company's keys (a hint of each, never the secret).", keysList),
	{
		name: "keys roll", synopsis: "KEY_ID [--overlap DURATION] [--json]", args: []string{"KEY_ID"},
		summary: "Make a new key in a key's place; the old one keeps working for the overlap (24h by default), then expires.",
		detail:  "The new key has the same company, mode, scopes, name, networks and expiry. Works at 10 active keys; a key can be rolled once.",
		example: "gateway keys roll key_0123456789abcdef --overlap 48h",
		needs:   config.NeedRedis | config.NeedHistory,
		flags:   keysRollFlags,
	},
	{
		name: "keys revoke", synopsis: "KEY_ID [--keep-previous] [--json]", args: []string{"KEY_ID"},
		summary: "Revoke a key: every gateway refuses it within a second.",
		detail: "A key made by a roll is revoked with the keys it replaced that still work (their overlap): " +
			"--keep-previous keeps them, and names them and until when they work.",
		example: "gateway keys revoke key_0123456789abcdef",
		needs:   config.NeedRedis | config.NeedHistory,
		flags:   keysRevokeFlags,
	},
	byCompany("limits get", "Show a company's LIVE and TEST rate limits.", limitsGet),
	{
		name: "limits set", synopsis: "--company ID [--mode LIVE|TEST] --rate N --burst N [--json]",
		summary: "Override a company's rate limit, live on every gateway.",
		detail:  "Refuses a company the live database does not know. Needs Redis and the gateway's own database (its audit log), not the platform's, so that a company can be throttled while the platform's database is down: then it says the company was not checked. --rps is read as --rate, its old name.",
		example: "gateway limits set --company " + exampleCompany + " --mode LIVE --rate 100 --burst 200",
		needs:   config.NeedRedis | config.NeedHistory, required: []string{"company", "rate", "burst"},
		aliases: map[string]string{"rps": "rate"},
		flags:   limitsSetFlags,
	},
	audited(byCompany("limits reset", "Put a company back on the default rate limits.", limitsReset)),
	{
		name: "limits whatif", synopsis: "--company ID --mode LIVE|TEST --rate N --burst N [--since TIME] [--max-refused PERCENT] [--json]",
		summary: "Say what a limit would have refused of a company's recorded traffic, before setting it.",
		detail: "Replays the requests the company offered its limit in each second (admitted or refused, summed over every gateway instance; " +
			"kept 48 hours by the second, 30 days by the minute) through the limiter's own arithmetic, at the proposed limit and at the limit in force: " +
			"requests refused, in how many seconds and minutes, the worst minute, and the smallest burst that keeps refusals at or under --max-refused at the proposed rate " +
			"(from 100 requests recorded). The line of the limit in force is what the gateway refused, as recorded. " +
			"Within a second, the requests are placed by the sixteenth of it they came in; the output says where the prediction is approximate.",
		example: "gateway limits whatif --company " + exampleCompany + " --mode LIVE --rate 20 --burst 40 --since 24h",
		needs:   config.NeedRedis | config.NeedLive, required: []string{"company", "mode", "rate", "burst"},
		flags: limitsWhatIfFlags,
	},
	{
		name: "limits shape", synopsis: "--company ID --mode LIVE|TEST [--since TIME] [--json]",
		summary: "Show how fast a company's requests come, hour by hour: the p50, p99 and busiest of its busy seconds, beside its limit.",
		detail:  "A busy second is one in which the company offered its limit at least one request (admitted or refused), over every gateway instance.",
		example: "gateway limits shape --company " + exampleCompany + " --mode LIVE --since 24h",
		needs:   config.NeedRedis | config.NeedLive, required: []string{"company", "mode"},
		flags: limitsShapeFlags,
	},
	{
		name: "limits headroom", synopsis: "[--mode LIVE|TEST] [--top N] [--json]",
		summary: "List the companies whose busiest seconds come nearest their limit, and those far below it (limits to lower).",
		detail:  "Each company's p99 busy second of today and yesterday (Luanda; within an eighth above), over its limit's rate; updated ten minutes at a time, two minutes after each ten.",
		example: "gateway limits headroom --mode LIVE --top 10",
		needs:   config.NeedRedis,
		flags:   limitsHeadroomFlags,
	},
	{
		name: "usage", synopsis: "--company ID [--days N] [--json]",
		summary: "Show a company's requests per day (Luanda), by mode and status class.",
		detail:  "Counted by every gateway instance; the last second of a running instance may not be in yet.",
		example: "gateway usage --company " + exampleCompany + " --days 30",
		needs:   config.NeedRedis, required: []string{"company"},
		flags: func(fs *flag.FlagSet) action {
			return usageShow(companyFlag(fs), fs.Int("days", admin.DefaultUsageDays, "show `N` days, today included"), jsonFlag(fs))
		},
	},
	{
		name: "audit", synopsis: "--company ID [--since TIME] [--json]",
		summary: "Show who changed a company's keys, limits and webhook endpoints, and what changed, oldest first.",
		detail: "Keys created, rolled, revoked or expired; limits set or reset; webhook endpoints created, changed, given a new secret or deleted, " +
			"deliveries sent again (replays, recoveries, test events), and exports imported (state.imported). Each line names the key or endpoint and sums up the change; --json has the full before and after. " +
			"Kept 400 days, in the gateway's database (historyDatabaseURL). The actor is the admin API's X-Actor, or user@host for this command line.",
		example: "gateway audit --company " + exampleCompany + " --since 7d",
		needs:   config.NeedRedis | config.NeedHistory, required: []string{"company"},
		flags: auditFlags,
	},
	{
		name: "webhooks create", synopsis: "--company ID --mode LIVE|TEST --url URL [--types LIST] [--description TEXT] [--disabled] [--json|--quiet]",
		summary: "Add a webhook endpoint to a company; its signing secret is shown this once.",
		detail:  "TEST endpoints get the sandbox's events, LIVE ones the live data's; at most 10 per company and mode. The URL must be https and resolve to public addresses (eventsAllowHTTP, eventsAllowedNetworks).",
		example: "gateway webhooks create --company " + exampleCompany + " --mode TEST --url https://erp.example.ao/webhooks --types invoice.paid,invoice.overdue",
		needs:   config.NeedRedis | config.NeedLive | config.NeedSecrets | config.NeedHistory, required: []string{"company", "mode", "url"},
		flags: webhooksCreateFlags,
	},
	byCompany("webhooks list", "List a company's webhook endpoints and their health.", webhooksList),
	{
		name: "webhooks update", synopsis: "WEBHOOK_ID [--url URL] [--types LIST] [--description TEXT] [--enable|--disable] [--json]", args: []string{"WEBHOOK_ID"},
		summary: "Change a webhook endpoint; enabling a disabled one delivers what waited.",
		example: "gateway webhooks update ep_abcdefghijklmnopqrstuvwxyz --enable",
		needs:   config.NeedRedis | config.NeedHistory,
		flags:   webhooksUpdateFlags,
	},
	{
		name: "webhooks rotate-secret", synopsis: "WEBHOOK_ID [--overlap DURATION] [--json|--quiet]", args: []string{"WEBHOOK_ID"},
		summary: "Give a webhook endpoint a new signing secret; the old one signs beside it for the overlap (24h by default).",
		example: "gateway webhooks rotate-secret ep_abcdefghijklmnopqrstuvwxyz --overlap 2h",
		needs:   config.NeedRedis | config.NeedSecrets | config.NeedHistory,
		flags:   webhooksRotateFlags,
	},
	byID("webhooks delete", []string{"WEBHOOK_ID"}, "Delete a webhook endpoint, what waits for it and its delivery log.",
		"gateway webhooks delete ep_abcdefghijklmnopqrstuvwxyz", webhooksDelete),
	{
		name: "webhooks reseal", synopsis: "[--json]",
		summary: "Seal every webhook signing secret with the current webhookSecretsKey: those kept in plain text, and those an old key sealed.",
		detail: "Every instance does this when it starts; run it after a key rotation to know when the old keys (webhookSecretsOldKeys) can go: " +
			"when it reports no endpoint left unopened. The secrets themselves do not change.",
		example: "gateway webhooks reseal",
		needs:   config.NeedRedis | config.NeedSecrets,
		flags:   func(fs *flag.FlagSet) action { return webhooksReseal(jsonFlag(fs)) },
	},
	{
		name: "webhooks deliveries", synopsis: "WEBHOOK_ID [--limit N] [--state STATE] [--type TYPE] [--json]", args: []string{"WEBHOOK_ID"},
		summary: "Show a webhook endpoint's newest deliveries: state, attempts, last answer.",
		example: "gateway webhooks deliveries ep_abcdefghijklmnopqrstuvwxyz --state failed",
		needs:   config.NeedRedis,
		flags:   webhooksDeliveriesFlags,
	},
	byID("webhooks replay", []string{"WEBHOOK_ID", "EVENT_ID"}, "Send one event to a webhook endpoint again, now, with its id.",
		"gateway webhooks replay ep_abcdefghijklmnopqrstuvwxyz evt_abcdefghijklmnopqrstuvwxyz", webhooksReplay),
	{
		name: "webhooks recover", synopsis: "WEBHOOK_ID --since TIME [--json]", args: []string{"WEBHOOK_ID"},
		summary: "Send again, now, every delivery of a webhook endpoint since a time that failed or waits for a retry (after fixing a receiver).",
		example: "gateway webhooks recover ep_abcdefghijklmnopqrstuvwxyz --since 72h",
		needs:   config.NeedRedis | config.NeedHistory, required: []string{"since"},
		flags: webhooksRecoverFlags,
	},
	byID("webhooks test", []string{"WEBHOOK_ID"}, "Send a test delivery (webhook.test) to a webhook endpoint.",
		"gateway webhooks test ep_abcdefghijklmnopqrstuvwxyz", webhooksTest),
	{
		name: "events listen", synopsis: "--company ID [--forward-to URL] [--types LIST] [--listen ADDR] [--expire DURATION]",
		summary: "Receive a company's TEST events here: print and verify each, and forward it to your handler.",
		detail:  "Registers a temporary TEST endpoint pointing at this command, removed when it stops (Ctrl+C) and expiring if abandoned. The gateway must be allowed to deliver to it (eventsAllowHTTP and eventsAllowedNetworks: the demo allows this machine).",
		example: "gateway events listen --company " + exampleCompany + " --forward-to http://localhost:3000/webhooks",
		needs:   config.NeedRedis | config.NeedLive | config.NeedSecrets | config.NeedHistory, required: []string{"company"},
		flags: eventsListenFlags,
	},
	{
		name: "events trigger", synopsis: "TYPE --company ID", args: []string{"TYPE"},
		summary: "Make a real change in the sandbox so that an event of TYPE flows: issue, pay, cancel or make overdue an invoice, submit one to AGT, create or change a client.",
		detail:  "TYPE: " + strings.Join(gendata.Triggers, ", ") + ". Only the sandbox (testDatabaseURL) is changed.",
		example: "gateway events trigger invoice.paid --company " + exampleCompany,
		needs:   config.NeedTest, required: []string{"company"},
		flags: eventsTriggerFlags,
	},
	{
		name: "state export", synopsis: "--out FILE [--recipient AGE1…... | --passphrase-file FILE] [--json]",
		summary: "Copy the control plane in Redis into a file: keys (their hashes, never a secret), limits, webhook endpoints with their signing secrets.",
		detail: "The audit log is not in it: it is in the gateway's database (historyDatabaseURL), backed up with that database's own tools. " +
			"The file is created mode 0600 and replaced whole, and signed with a key derived from webhookSecretsKey, so that an import can prove it came from this deployment. " +
			"With --recipient (from gateway state keygen; its identity kept offline) or --passphrase-file it is also encrypted (age); without, " +
			"it holds the signing secrets in plain text, and the command says so. Restore with gateway state import.",
		example: "gateway state export --out control-plane.gwstate --recipient age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p",
		needs:   config.NeedRedis | config.NeedSecrets, required: []string{"out"},
		flags: stateExportFlags,
	},
	{
		name: "state import", synopsis: "FILE [--identity FILE | --passphrase-file FILE] [--accept-unsigned] [--json]", args: []string{"FILE"},
		summary: "Put an export back: into an empty Redis, or merged into a live one (the newer record wins, a revocation always wins).",
		detail: "Ids, creation times and states are kept. The whole file is checked before the first write: a file not signed by this deployment's key, " +
			"or truncated, altered, foreign or wrongly opened, or with a record the admin API would refuse, changes nothing. Each company it changes gets a state.imported entry in its audit log. " +
			"Importing twice changes nothing the second time. Restored webhook endpoints get the changes since the export's resume point again (docs/operators.md). " +
			"An older gateway's export also holds the audit log: its entries the log lacks are added, by id.",
		example: "gateway state import control-plane.gwstate --identity control-plane.key",
		needs:   config.NeedRedis | config.NeedSecrets | config.NeedHistory,
		flags:   stateImportFlags,
	},
	{
		name: "state keygen", synopsis: "[--out FILE]", summary: "Make an age key: its identity (secret) and its recipient (public).",
		detail:  "For webhookSecretsKey (every instance the same), or for exports: give the recipient to gateway state export --recipient and keep the identity offline, for gateway state import --identity.",
		example: "gateway state keygen --out control-plane.key",
		flags:   stateKeygenFlags,
	},
	{
		name: "history migrate", synopsis: "[--json]",
		summary: "Bring the gateway's own database (historyDatabaseURL) up to date, and copy the audit log an earlier version kept in Redis into it.",
		detail: "Applies the migrations the database lacks, each once, under a lock (safe beside running instances), as every gateway serve does when it starts; " +
			"refuses a database ahead of this binary, or whose applied migration differs. Then copies the audit streams found in Redis, by id, and deletes them there: " +
			"run it after a rolling upgrade's last older instance has stopped.",
		example: "gateway history migrate",
		needs:   config.NeedRedis | config.NeedHistory,
		flags:   func(fs *flag.FlagSet) action { return historyMigrate(jsonFlag(fs)) },
	},
	{
		name: "history status", synopsis: "[--json]",
		summary: "Show where the gateway's own database (historyDatabaseURL) is: each track's migrations applied, and those this binary would apply.",
		detail:  "Changes nothing. Exits 1 when the database is ahead of this binary or its applied migrations differ, saying what to do.",
		example: "gateway history status",
		needs:   config.NeedHistory,
		flags:   func(fs *flag.FlagSet) action { return historyStatus(jsonFlag(fs)) },
	},
	{
		name: "data schema", synopsis: "[--database URL]", summary: "Load the platform schema into the configured live and sandbox databases; one that has it already is left as it is.",
		example: "gateway data schema",
		needs:   config.NeedDatabases,
		flags:   func(fs *flag.FlagSet) action { return dataSchema(databaseFlag(fs)) },
	},
	{
		name: "data load", synopsis: "[--size small|large] [--database URL] [--seed N] [--shape mixed|even|aging]",
		summary: "Load generated data: the demo's small set into both databases, or the platform-scale set into one.",
		detail:  "small: three companies (A, B active; S suspended) with clients and invoices, in the live and the sandbox database. large: one PostgreSQL database (--database) with 1,000,000 documents of one company and 1,000 smaller companies.",
		example: "gateway data load --size small",
		needs:   config.NeedDatabases,
		flags:   dataLoadFlags,
	},
	{
		name: "probe", synopsis: "URL", args: []string{"URL"},
		summary: "Exit 0 if URL answers 200: the health check of containers, which have no shell or curl.",
		detail:  "On /readyz it also prints what the gateway's Redis allows (persistence, eviction, replicas, and how many replicas each change waits for); those are warnings, never a failure.",
		example: "gateway probe http://127.0.0.1:8080/readyz",
		flags:   func(*flag.FlagSet) action { return cmdProbe },
	},
	{
		name: "version", summary: "Print the version.", example: "gateway version",
		flags: func(*flag.FlagSet) action { return cmdVersion },
	},
}

// byCompany is a command of one company's records in Redis, with --json:
// keys list, limits get and reset, webhooks list.
func byCompany(name, summary string, act func(company *string, asJSON *bool) action) *command {
	return &command{
		name: name, synopsis: "--company ID [--json]", summary: summary,
		example: "gateway " + name + " --company " + exampleCompany,
		needs:   config.NeedRedis, required: []string{"company"},
		flags: func(fs *flag.FlagSet) action { return act(companyFlag(fs), jsonFlag(fs)) },
	}
}

// audited is c, which changes what the audit log records: it opens the
// gateway's database too.
func audited(c *command) *command {
	c.needs |= config.NeedHistory
	return c
}

// byID is a change of one record in Redis named by its arguments (a
// webhook endpoint's id), with --json, recorded in the audit log: webhooks
// delete, replay and test.
func byID(name string, args []string, summary, example string, act func(asJSON *bool) action) *command {
	return &command{
		name: name, synopsis: strings.Join(args, " ") + " [--json]", args: args, summary: summary, example: example,
		needs: config.NeedRedis | config.NeedHistory,
		flags: func(fs *flag.FlagSet) action { return act(jsonFlag(fs)) },
	}
}

func jsonFlag(fs *flag.FlagSet) *bool { return fs.Bool("json", false, "print JSON") }

func companyFlag(fs *flag.FlagSet) *string { return fs.String("company", "", "company `ID` (a UUID)") }

func databaseFlag(fs *flag.FlagSet) *string {
	return fs.String("database", "", "one database `URL` instead of the configured live and sandbox ones")
}
