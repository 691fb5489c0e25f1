package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/state"
)

// An import proves where its file comes from, as an operator meets it, and
// says what is wrong in plain words (a truncated file: no "state:"): a
// plain export whose limit was changed and whose checksum was made again is
// refused in plain words and writes nothing; the export itself is imported
// and recorded in the company's audit log, by whom and with what it
// changed; an unsigned export (of a gateway keeping secrets in plain text)
// is refused unless --accept-unsigned is given, and then imported with a
// warning and recorded as unsigned.
func TestStateImportProvesItsOrigin(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	gatewayDB := "sqlite:" + filepath.Join(t.TempDir(), "gateway.db")
	env := envOf(map[string]string{"GATEWAY_REDIS_URL": testenv.RedisURL(), "GATEWAY_REDIS_PREFIX": prefix,
		"GATEWAY_WEBHOOK_SECRETS_KEY": testSecretsKey, "GATEWAY_HISTORY_DATABASE_URL": gatewayDB})
	plaintext := envOf(map[string]string{"GATEWAY_REDIS_URL": testenv.RedisURL(), "GATEWAY_REDIS_PREFIX": prefix,
		"GATEWAY_WEBHOOK_SECRETS_KEY": "", "GATEWAY_WEBHOOK_SECRETS_PLAINTEXT": "true", "GATEWAY_HISTORY_DATABASE_URL": gatewayDB})
	lose := func() { testenv.DeletePrefix(t, rdb, prefix) }
	keys := func() int { return len(rdb.Keys(context.Background(), prefix+"*").Val()) }
	dir, co := t.TempDir(), gendata.DemoCompanyA
	if code, _, errs := gw(t, env, "limits", "set", "--company", co, "--mode", "LIVE", "--rps", "42", "--burst", "84"); code != 0 {
		t.Fatalf("limits set: %s", errs)
	}
	file := filepath.Join(dir, "plane.gwstate")
	if code, _, errs := gw(t, env, "state", "export", "--out", file); code != 0 || strings.Contains(errs, "not signed") {
		t.Fatalf("export: %d %s", code, errs)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	forged := filepath.Join(dir, "forged.gwstate")
	if err := os.WriteFile(forged, resummed(bytes.Replace(b, []byte(`"live_rate":"42"`), []byte(`"live_rate":"4200"`), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	trunc := filepath.Join(dir, "trunc.gwstate")
	if err := os.WriteFile(trunc, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	lose()
	if code, _, errs := gw(t, env, "state", "import", trunc); code != 1 || errs != "gateway: "+trunc+": "+state.ErrTruncated.Error()+"; nothing was imported\n" {
		t.Fatalf("truncated import: %d %q", code, errs)
	}
	code, _, errs := gw(t, env, "state", "import", forged)
	if code != 1 || !strings.HasPrefix(errs, "gateway: "+forged+": the file's signature does not match its content") || !strings.Contains(errs, "nothing was imported") {
		t.Fatalf("forged import: %d %s", code, errs)
	}
	if n := keys(); n != 0 {
		t.Fatalf("the forged import wrote %d keys", n)
	}
	code, out, errs := gw(t, env, "state", "import", file)
	if code != 0 || !strings.Contains(out, "limits    1 added") || !strings.Contains(out, "Recorded in the audit log of 1 company (state.imported)") {
		t.Fatalf("import: %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = gw(t, env, "audit", "--company", co)
	if code != 0 || !strings.Contains(out, commandActor()) || !strings.Contains(out, "state.imported") || !strings.Contains(out, "limits 1 added, 0 updated") || strings.Contains(out, "unsigned") {
		t.Fatalf("audit after the import: %d\n%s", code, out)
	}

	unsigned := filepath.Join(dir, "unsigned.gwstate")
	if code, _, errs = gw(t, plaintext, "state", "export", "--out", unsigned); code != 0 || !strings.Contains(errs, "is not signed") {
		t.Fatalf("export without a key: %d %s", code, errs)
	}
	lose()
	if code, _, errs = gw(t, env, "state", "import", unsigned); code != 1 || !strings.Contains(errs, "not signed") || !strings.Contains(errs, "--accept-unsigned") || keys() != 0 {
		t.Fatalf("unsigned import: %d %s (%d keys)", code, errs, keys())
	}
	code, out, errs = gw(t, env, "state", "import", unsigned, "--accept-unsigned")
	if code != 0 || !strings.Contains(out, "limits    1 added") || !strings.Contains(errs, "WARNING") {
		t.Fatalf("unsigned import accepted: %d\n%s\n%s", code, out, errs)
	}
	if code, out, _ = gw(t, env, "audit", "--company", co); code != 0 || !strings.Contains(out, "(unsigned: --accept-unsigned)") {
		t.Fatalf("audit after the unsigned import: %d\n%s", code, out)
	}
}

// resummed is b with its checksum line made again, as someone editing the
// file would.
func resummed(b []byte) []byte {
	i := bytes.LastIndex(b, []byte("\nsha256 "))
	sum := sha256.Sum256(b[:i])
	return append(append([]byte{}, b[:i]...), "\nsha256 "+hex.EncodeToString(sum[:])+"\n"...)
}

// An export of a gateway that kept the audit log in Redis (format 1, with
// an audit part) is still imported: its audit entries go into the gateway's
// database with their ids, beside the import's own record, and importing
// it again adds none.
func TestStateImportOfAnOlderExportsAuditLog(t *testing.T) {
	t.Parallel()
	env, _ := stateEnv(t)
	co := gendata.DemoCompanyA
	if code, _, errs := gw(t, env, "limits", "set", "--company", co, "--mode", "LIVE", "--rps", "42", "--burst", "84"); code != 0 {
		t.Fatalf("limits set: %s", errs)
	}
	file := filepath.Join(t.TempDir(), "plane.gwstate")
	if code, _, errs := gw(t, env, "state", "export", "--out", file); code != 0 {
		t.Fatalf("export: %s", errs)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ms := strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10)
	older := `"audit":{"version":1,"companies":[{"companyId":"` + co + `","entries":[` +
		`{"id":"` + ms + `-0","fields":{"time":"` + ms + `","actor":"old@ops","action":"key.created","key":"key_aaaaaaaaaaaaaaaaaaaa"}},` +
		`{"id":"` + ms + `-1","fields":{"time":"` + ms + `","actor":"old@ops","action":"limits.reset"}}]}]},"keys":`
	body := b[bytes.IndexByte(b, '\n')+1 : bytes.LastIndex(b, []byte("\nsignature "))]
	body = bytes.Replace(bytes.Replace(body, []byte(`"format":3`), []byte(`"format":1`), 1), []byte(`"keys":`), []byte(older), 1)
	v1 := filepath.Join(t.TempDir(), "v1.gwstate")
	if err := os.WriteFile(v1, resummed(append(append([]byte("invoicing-gateway-state 1 plain\n"), body...), "\nsha256 x\n"...)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := gw(t, env, "state", "import", v1, "--accept-unsigned")
	if code != 0 || !strings.Contains(out, "audit     2 added, 0 updated, 0 unchanged") {
		t.Fatalf("import of a format 1 file: %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = gw(t, env, "audit", "--company", co, "--json")
	if code != 0 || !strings.Contains(out, `"id":"`+ms+`-0"`) || !strings.Contains(out, `"id":"`+ms+`-1"`) || !strings.Contains(out, `"audit":{"added":2`) {
		t.Fatalf("audit after the import: %d\n%s", code, out)
	}
	if code, out, _ = gw(t, env, "state", "import", v1, "--accept-unsigned"); code != 0 || !strings.Contains(out, "audit     0 added, 0 updated, 2 unchanged") {
		t.Fatalf("the import again: %d\n%s", code, out)
	}
}
