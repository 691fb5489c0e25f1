package state_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/state"
	"github.com/invoicing-ao/gateway/tenants"
)

// Every record an import brings is checked as the admin API checks what it
// is given, even in a file signed with the deployment's key (an operator's
// mistake, or a file made before the rules): a key's name holding a key's
// or a signing secret, a direction-changing character, or 8 MiB; a company
// id that is not one, or in upper case, in any part; an endpoint's URL the
// deployment would refuse (http, a loopback address, by name too) or a
// description holding a secret; an audit entry larger than any change
// makes. Each is refused naming the record, and nothing is written.
func TestImportValidatesEveryRecord(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	key := sealKey(t)
	p := newPlane(t, rdb, prefix, key)
	p.populate()
	plain := p.export(state.Sealing{})
	older := p.asFormat2(plain, olderAudit(time.Now())) // with an audit part
	const secretName = "igw_live_abcdefghijklmnopqrstuvwxyz0123"
	coA, upperA := `"0a5e7c1e-0000-4000-8000-00000000000a"`, `"0A5E7C1E-0000-4000-8000-00000000000A"`
	for i, c := range []struct {
		name, part, old, new string
		want                 error
		says                 string
	}{
		{"a key's name holding a key", "keys", `"name":"active"`, `"name":"erp ` + secretName + `"`, authz.ErrInvalidState, "looks like an API key"},
		{"a key's name holding a signing secret", "keys", `"name":"active"`, `"name":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"`, authz.ErrInvalidState, "webhook signing secret"},
		{"a key's name with U+202E", "keys", `"name":"active"`, `"name":"fdp.\u202Eexe"`, authz.ErrInvalidState, "direction-changing"},
		{"a key's name of 8 MiB", "keys", `"name":"active"`, `"name":"` + strings.Repeat("a", 8<<20) + `"`, authz.ErrInvalidState, "at most 100 bytes"},
		{"a key's company that is not one", "keys", `"company":` + coA, `"company":"not-a-uuid/../../x"`, authz.ErrInvalidState, "not a company id"},
		{"a key's company in upper case", "keys", `"company":` + coA, `"company":` + upperA, authz.ErrInvalidState, "not a company id"},
		{"a key's hint that is not one", "keys", `"hint":"igw_live_…`, `"hint":"see https://evil.example/…`, authz.ErrInvalidState, "hint"},
		{"limits of a company in upper case", "limits", `"companyId":` + coA, `"companyId":` + upperA, tenants.ErrInvalidState, "company"},
		{"limits of a company that is not one", "limits", `"companyId":` + coA, `"companyId":"not-a-uuid/../../x"`, tenants.ErrInvalidState, "company"},
		{"an endpoint's description holding a secret", "webhooks", `\"desc\":\"\"`, `\"desc\":\"igw_test_abcdefghijklmnopqrstuvwxyz0123\"`, events.ErrInvalidState, "description"},
		{"an endpoint of a company in upper case", "webhooks", `\"company\":` + strings.ReplaceAll(coA, `"`, `\"`), `\"company\":` + strings.ReplaceAll(upperA, `"`, `\"`), events.ErrInvalidState, "company"},
		{"an older file's audit log of a company that is not one", "audit", `"companyId":` + coA, `"companyId":"not-a-uuid/../../x"`, audit.ErrInvalidState, "not a company id"},
		{"an older file's audit entry of 8 MiB", "audit", `"actor":"rui@ops"`, `"actor":"rui@ops","after":"` + strings.Repeat("a", 8<<20) + `"`, audit.ErrInvalidState, "before and after"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := plain
			if c.part == "audit" {
				base = older
			}
			file := p.resign(rewrite(t, base, c.part, c.old, c.new))
			q := newPlane(t, rdb, prefix+strconv.Itoa(i)+":", key) // a Redis of its own
			_, err := q.importFile(file, state.Opening{})
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("import: %v, want %v saying %q", err, c.want, c.says)
			}
			if len(err.Error()) > 300 {
				t.Errorf("the error is %d bytes long", len(err.Error()))
			}
			if n := len(q.snapshot()); n != 0 || q.auditCount() != 0 {
				t.Fatalf("a refused file wrote %d keys, %d audit entries", n, q.auditCount())
			}
		})
	}
}

// The deployment's own rules for endpoints hold on import: its exports,
// made where http and loopback receivers were allowed, are refused where
// they are not, the URL named.
func TestImportChecksEndpointsURLs(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	key := sealKey(t)
	p := newPlane(t, rdb, prefix, key)
	p.populate()
	plain := p.export(state.Sealing{})
	strict := newStrictPlane(t, rdb, prefix+"strict:", key)
	for _, c := range []struct{ name, old, new, says string }{
		{"http", "", "", `must use https, not \"http\"`},
		{"https to a loopback address", `http://127.0.0.1:9/`, `https://127.0.0.1:9/`, "loopback"},
		{"https to localhost", `http://127.0.0.1:9/`, `https://localhost:9/`, "loopback"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := plain
			if c.old != "" {
				file = p.resign(rewrite(t, plain, "webhooks", c.old, c.new))
			}
			_, err := strict.importFile(file, state.Opening{})
			if !errors.Is(err, events.ErrInvalidState) || !strings.Contains(err.Error(), "url") || !strings.Contains(err.Error(), strings.ReplaceAll(c.says, `\"`, `"`)) {
				t.Fatalf("import: %v, want the url refused: %s", err, c.says)
			}
			if n := len(strict.snapshot()); n != 0 {
				t.Fatalf("a refused file wrote %d keys", n)
			}
		})
	}
}

// rewrite is a plain file with the first old of one part's JSON replaced by
// new (its signature line kept, to be made again).
func rewrite(t *testing.T, file []byte, part, old, new string) []byte {
	t.Helper()
	head := bytes.IndexByte(file, '\n') + 1
	sig := bytes.LastIndex(file, []byte("\nsignature "))
	var doc struct {
		Format    int                        `json:"format"`
		CreatedAt json.RawMessage            `json:"createdAt"`
		Gateway   string                     `json:"gateway"`
		Parts     map[string]json.RawMessage `json:"parts"`
	}
	if err := json.Unmarshal(file[head:sig], &doc); err != nil {
		t.Fatal(err)
	}
	raw := string(doc.Parts[part])
	if !strings.Contains(raw, old) {
		t.Fatalf("the %s part has no %s", part, old)
	}
	doc.Parts[part] = json.RawMessage(strings.Replace(raw, old, new, 1))
	body, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return append(append(append([]byte{}, file[:head]...), body...), file[sig:]...)
}
