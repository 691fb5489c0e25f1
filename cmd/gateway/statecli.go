package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"filippo.io/age"

	auditlog "github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/internal/durable"
	"github.com/invoicing-ao/gateway/internal/seal"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/state"
)

// `gateway state export|import|keygen`: a copy of the control plane in a
// file, and back (state; docs/operators.md, "Backup and restore").

// stateConfig is the control plane's parts, each exported and imported by
// the adapter that owns it; the audit log, in the gateway's database and
// backed up with it, is imported from older files only.
func stateConfig(d *deps) state.Config {
	return state.Config{
		Redis:   d.rdb,
		Durable: durable.Policy{Target: d.guard.target, Timeout: d.cfg.RedisReplicaTimeout}, // as every change (redisguard.go)
		Gateway: versionString(),
		Parts: []state.Part{
			part("keys", d.keys.ExportState, d.keys.PlanImport),
			part("limits", d.limiter.ExportState, d.limiter.PlanImport),
			part("webhooks", d.events.ExportState, d.events.PlanImport),
			importOnly("audit", d.audit.PlanImport),
		},
	}
}

// importOnly makes a state.Part of a part files no longer carry: an older
// file's is imported, an export leaves it out.
func importOnly[S interface{ Records() int }, P state.Plan](name string, plan func(context.Context, S) (P, error)) state.Part {
	p := part(name, nil, plan)
	p.ImportOnly, p.Export = true, nil
	return p
}

// part makes a state.Part of an adapter's typed export and import.
func part[S interface{ Records() int }, P state.Plan](name string, export func(context.Context) (S, error), plan func(context.Context, S) (P, error)) state.Part {
	return state.Part{
		Name: name,
		Export: func(ctx context.Context) (any, int, error) {
			s, err := export(ctx)
			return s, s.Records(), err
		},
		Plan: func(ctx context.Context, raw json.RawMessage) (state.Plan, error) {
			var s S
			dec := json.NewDecoder(strings.NewReader(string(raw)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s); err != nil {
				return nil, fmt.Errorf("%w: %w", state.ErrNotAnExport, err)
			}
			return plan(ctx, s)
		},
	}
}

func stateExportFlags(fs *flag.FlagSet) action {
	out := fs.String("out", "", "write the export to `FILE` (created mode 0600; replaced whole, never half written)")
	passFile := fs.String("passphrase-file", "", "encrypt with the passphrase in `FILE` (its first line)")
	var rcpts listFlag
	fs.Var(&rcpts, "recipient", "encrypt to this age `RECIPIENT` (age1…, from gateway state keygen); repeatable")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, c *invocation) error {
		var s state.Sealing
		var err error
		if *passFile != "" && len(rcpts) > 0 {
			return usagef("give --passphrase-file or --recipient, not both")
		}
		if s.Passphrase, err = readPassphrase(*passFile); err != nil {
			return err
		}
		for _, r := range rcpts {
			rs, err := age.ParseRecipients(strings.NewReader(r))
			if err != nil {
				return usagef("--recipient %q: not an age recipient (age1…): %v", r, err)
			}
			s.Recipients = append(s.Recipients, rs...)
		}
		keys, err := fileKeys(c)
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			s.SigningKey = keys[0]
		}
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (exported, error) {
			start := time.Now()
			records, size, err := writeExport(ctx, *out, stateConfig(d), s)
			return exported{File: *out, Bytes: size, Encrypted: s.Encrypted(), Records: records, took: time.Since(start)}, err
		}, func(w io.Writer, e exported) error {
			fmt.Fprintf(w, "Exported %s, the limits of %s and %s to %s (%d bytes, %s).\n",
				plural(e.Records["keys"], "key", "keys"), plural(e.Records["limits"], "company", "companies"),
				plural(e.Records["webhooks"], "webhook endpoint", "webhook endpoints"),
				e.File, e.Bytes, e.took.Round(time.Millisecond))
			if s.SigningKey == nil {
				fmt.Fprintf(c.stderr, "WARNING: %s is not signed: this gateway has no %s to sign it with, so nothing will prove it came from this deployment, "+
					"and importing it needs --accept-unsigned.\n", e.File, config.SettingName("WebhookSecretsKey"))
			}
			if !e.Encrypted {
				fmt.Fprintf(c.stderr, "WARNING: %s is not encrypted: it holds the webhook endpoints' signing secrets in plain text, and whoever reads it can sign webhooks to those integrators. "+
					"Keep it like a password, or export with --recipient or --passphrase-file.\n", e.File)
			}
			return nil
		})
	}
}

// exported is what an export wrote, as --json prints it, and how long it
// took.
type exported struct {
	Bytes     int64          `json:"bytes"`
	Encrypted bool           `json:"encrypted"`
	File      string         `json:"file"`
	Records   map[string]int `json:"records"`
	took      time.Duration
}

// writeExport writes an export to path: into a new file of mode 0600 beside
// it, renamed over path once complete, so that path is either the previous
// export or the new one, whole.
func writeExport(ctx context.Context, path string, cfg state.Config, s state.Sealing) (map[string]int, int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, 0, fmt.Errorf("--out %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is none
	records, err := state.Export(ctx, cfg, tmp, s)
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, 0, err
	}
	info, err := os.Stat(tmp.Name())
	if err != nil {
		return nil, 0, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, 0, fmt.Errorf("--out %s: %w", path, err)
	}
	return records, info.Size(), nil
}

// fileKeys are the keys that sign and check export files, derived from
// webhookSecretsKey (first) and the old keys (seal.Keyring.FileKeys); none
// when secrets are kept in plain text.
func fileKeys(c *invocation) ([][]byte, error) {
	cfg, err := c.config()
	if err != nil {
		return nil, err
	}
	ring, err := cfg.SecretsKeyring()
	if err != nil {
		return nil, err
	}
	return ring.FileKeys(), nil
}

// readPassphrase is the first line of a passphrase file ("" for no file).
func readPassphrase(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--passphrase-file: %w", err)
	}
	p, _, _ := strings.Cut(string(b), "\n")
	if p = strings.TrimRight(p, "\r"); p == "" {
		return "", fmt.Errorf("--passphrase-file %s: its first line is empty", path)
	}
	return p, nil
}

func stateImportFlags(fs *flag.FlagSet) action {
	passFile := fs.String("passphrase-file", "", "the passphrase the file was encrypted with, in `FILE` (its first line)")
	identity := fs.String("identity", "", "an age identity `FILE` (from gateway state keygen) of a recipient the file was encrypted to")
	unsigned := fs.Bool("accept-unsigned", false, "import a file whose signature cannot be checked (an older gateway's export, or one signed with a key this gateway does not hold); the audit log records it")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, c *invocation) error {
		var o state.Opening
		var err error
		if o.Passphrase, err = readPassphrase(*passFile); err != nil {
			return err
		}
		if *identity != "" {
			f, err := os.Open(*identity)
			if err != nil {
				return fmt.Errorf("--identity: %w", err)
			}
			o.Identities, err = age.ParseIdentities(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("--identity %s: %w", *identity, err)
			}
		}
		if o.SigningKeys, err = fileKeys(c); err != nil {
			return err
		}
		o.AcceptUnsigned = *unsigned
		f, err := os.Open(c.args[0])
		if err != nil {
			return err
		}
		doc, err := state.Read(f, o)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w; nothing was imported", c.args[0], err)
		}
		if !doc.Signed {
			fmt.Fprintf(c.stderr, "WARNING: %s is imported unchecked (--accept-unsigned): nothing proves it came from this deployment; the audit log records it so.\n", c.args[0])
		}
		d, err := c.open(ctx)
		if err != nil {
			return err
		}
		defer d.Close()
		cfg, audited := stateConfig(d), 0
		cfg.Audit = importAudit(d, commandActor(), &audited)
		counts, err := state.Import(ctx, cfg, doc)
		if err != nil && !errors.Is(err, state.ErrNotReplicated) && !errors.Is(err, state.ErrNotAudited) {
			if counts == nil {
				return fmt.Errorf("%s: %w; nothing was imported", c.args[0], err)
			}
			return err
		}
		if *asJSON {
			out := map[string]any{"exportedAt": doc.CreatedAt, "parts": counts, "signed": doc.Signed, "auditedCompanies": audited}
			if jerr := json.NewEncoder(c.stdout).Encode(out); jerr != nil {
				return jerr
			}
			return err
		}
		printImport(c, doc, counts, d.cfg)
		if audited > 0 {
			fmt.Fprintf(c.stdout, "Recorded in the audit log of %s (%s).\n", plural(audited, "company", "companies"), auditlog.ActionStateImported)
		}
		return err
	}
}

func printImport(c *invocation, doc state.Document, counts map[string]state.Counts, cfg config.Config) {
	fmt.Fprintf(c.stdout, "Imported the export of %s (gateway %s):\n", doc.CreatedAt.Format(time.RFC3339), doc.Gateway)
	for _, name := range []string{"keys", "limits", "webhooks", "audit"} {
		n, ok := counts[name]
		if !ok { // the audit log, in a file of format 3
			continue
		}
		fmt.Fprintf(c.stdout, "  %-9s %d added, %d updated, %d unchanged\n", name, n.Added, n.Updated, n.Unchanged)
	}
	plan, _ := counts["webhooks"].Plan.(*events.ImportPlan)
	if plan == nil {
		return
	}
	detection := plan.Detection()
	for _, m := range invoicing.Modes {
		at, ok := detection[m]
		switch {
		case !ok:
		case at.IsZero():
			fmt.Fprintf(c.stdout, "%s: the export has no resume point, so detection reads back %s (%s) for the restored webhook endpoints: "+
				"the events of that window are sent again, under the same webhook-id where they had been sent.\n", m, cmp.Or(cfg.EventsRecovery, events.DefaultRecovery), config.SettingName("EventsRecovery"))
		default:
			fmt.Fprintf(c.stdout, "%s: detection resumes at the export's resume point, %s: the changes since are read again, "+
				"and an event of them sent before the loss is sent again under the same webhook-id.\n", m, at.UTC().Format(time.RFC3339))
		}
	}
}

// stateKeygenFlags makes an age key: into a new file of mode 0600 (never
// over another: a key lost is its exports lost), or on stdout.
func stateKeygenFlags(fs *flag.FlagSet) action {
	out := fs.String("out", "", "write the identity to `FILE`, created mode 0600 (an existing file is never replaced); default: stdout")
	return func(ctx context.Context, c *invocation) error {
		id, rcpt, err := seal.Generate()
		if err != nil {
			return err
		}
		if *out == "" {
			fmt.Fprintf(c.stderr, "Public key (the recipient, for gateway state export --recipient): %s\n", rcpt)
			_, err = fmt.Fprintln(c.stdout, id)
			return err
		}
		f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		_, err = fmt.Fprintf(f, "# created: %s\n# public key: %s\n%s\n", time.Now().UTC().Format(time.RFC3339), rcpt, id)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "Wrote the identity to %s. Public key (the recipient, for gateway state export --recipient):\n%s\n", *out, rcpt)
		return nil
	}
}
