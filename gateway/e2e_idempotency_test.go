package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/idempotency"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

const clientsPath = "/api/v1/v1/clients"

// rowsNamed counts the company's clients named name, in the database.
func rowsNamed(t *testing.T, in *instance, mode invoicing.Mode, company, name string) int64 {
	t.Helper()
	st := in.live
	if mode == invoicing.Test {
		st = in.test
	}
	p, err := st.ListClients(context.Background(), company, invoicing.ClientFilter{Search: name, Page: 1, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, c := range p.Data {
		if c.Name == name {
			n++
		}
	}
	return n
}

func idemPost(t *testing.T, in *instance, key, company, idemKey, body string) resp {
	t.Helper()
	return do(t, in.pub.URL, req{Method: "POST", Path: clientsPath, Key: key, Company: company, Body: body,
		Header: map[string]string{"Idempotency-Key": idemKey}})
}

// expectReplay asserts that r is first's answer again, byte for byte, marked
// as a replay.
func expectReplay(t *testing.T, first, r resp) {
	t.Helper()
	if r.Status != first.Status || !bytes.Equal(r.Body, first.Body) || r.Header.Get("Location") != first.Header.Get("Location") {
		t.Fatalf("retry answered %d %s (Location %q); want the first answer %d %s (Location %q)",
			r.Status, r.Body, r.Header.Get("Location"), first.Status, first.Body, first.Header.Get("Location"))
	}
	if r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("a replay without Idempotent-Replayed: true")
	}
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("the first answer says Idempotent-Replayed")
	}
}

func TestIdempotentCreate(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	kb := in.key(t, coB, invoicing.Live, allScopes)
	kt := in.key(t, coA, invoicing.Test, allScopes)

	t.Run("retries get the first answer and create nothing", func(t *testing.T) {
		for _, body := range []string{`{"name":"Retry Sem NIF"}`, `{"name":"Retry Com NIF","nif":"5400111222"}`} {
			first := idemPost(t, in, k.Key, coA, "key-"+body, body)
			if first.Status != 201 {
				t.Fatalf("first attempt: %d %s", first.Status, first.Body)
			}
			for range 3 {
				expectReplay(t, first, idemPost(t, in, k.Key, coA, "key-"+body, body))
			}
			name := first.json(t)["name"].(string)
			if n := rowsNamed(t, in, invoicing.Live, coA, name); n != 1 {
				t.Fatalf("%d rows named %q after 4 attempts, want 1", n, name)
			}
		}
	})
	t.Run("another body with the key is refused", func(t *testing.T) {
		first := idemPost(t, in, k.Key, coA, "reused", `{"name":"Primeiro"}`)
		if first.Status != 201 {
			t.Fatalf("first: %d %s", first.Status, first.Body)
		}
		expectProblem(t, idemPost(t, in, k.Key, coA, "reused", `{"name":"Segundo"}`), 422, "idempotency_key_reused")
		if n := rowsNamed(t, in, invoicing.Live, coA, "Segundo"); n != 0 {
			t.Fatalf("the refused request created %d clients", n)
		}
	})
	t.Run("final refusals are kept", func(t *testing.T) {
		invalid := idemPost(t, in, k.Key, coA, "invalid", `{"name":"X","nif":"123"}`)
		expectProblem(t, invalid, 400, "invalid_body")
		expectReplay(t, invalid, idemPost(t, in, k.Key, coA, "invalid", `{"name":"X","nif":"123"}`))

		if r := do(t, in.pub.URL, req{Method: "POST", Path: clientsPath, Key: k.Key, Company: coA, Body: `{"name":"Dono","nif":"5400333444"}`}); r.Status != 201 {
			t.Fatalf("setup: %d", r.Status)
		}
		conflict := idemPost(t, in, k.Key, coA, "conflict", `{"name":"Outro","nif":"5400333444"}`)
		expectProblem(t, conflict, 409, "nif_conflict")
		expectReplay(t, conflict, idemPost(t, in, k.Key, coA, "conflict", `{"name":"Outro","nif":"5400333444"}`))
	})
	t.Run("a key is the company's and the mode's", func(t *testing.T) { idemKeyPerScope(t, in, k.Key, kb.Key, kt.Key) })
	t.Run("malformed keys", func(t *testing.T) {
		// (Characters Go's client refuses to send are unit-tested.)
		for _, bad := range []string{strings.Repeat("k", 256), ""} {
			r := idemPost(t, in, k.Key, coA, bad, `{"name":"Nunca"}`)
			expectProblem(t, r, 400, "invalid_parameter")
		}
		twice := send2(t, in.pub.URL+clientsPath, k.Key, coA, `{"name":"Nunca"}`, "Idempotency-Key", "a", "b")
		if twice != 400 {
			t.Errorf("two Idempotency-Key headers: %d, want 400", twice)
		}
		if n := rowsNamed(t, in, invoicing.Live, coA, "Nunca"); n != 0 {
			t.Fatalf("a refused request created %d clients", n)
		}
		if r := idemPost(t, in, k.Key, coA, strings.Repeat("k", 255), `{"name":"Chave Longa"}`); r.Status != 201 {
			t.Fatalf("a 255-character key: %d %s", r.Status, r.Body)
		}
	})
	t.Run("a retry while the first runs is told so", func(t *testing.T) { idemInProgress(t, w, in, k.Key) })
}

// idemKeyPerScope: one Idempotency-Key in another company or mode creates a
// client of its own there (keys of A LIVE, B LIVE and A TEST).
func idemKeyPerScope(t *testing.T, in *instance, aLive, bLive, aTest string) {
	body := `{"name":"Mesma Chave"}`
	a := idemPost(t, in, aLive, coA, "shared-key", body)
	b := idemPost(t, in, bLive, coB, "shared-key", body)
	c := idemPost(t, in, aTest, coA, "shared-key", body)
	for _, r := range []resp{a, b, c} {
		if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("each scope creates its own client: %d %s", r.Status, r.Body)
		}
	}
	ids := map[any]bool{a.json(t)["id"]: true, b.json(t)["id"]: true, c.json(t)["id"]: true}
	if len(ids) != 3 {
		t.Fatalf("ids %v: want three different clients", ids)
	}
	if rowsNamed(t, in, invoicing.Live, coA, "Mesma Chave") != 1 || rowsNamed(t, in, invoicing.Live, coB, "Mesma Chave") != 1 ||
		rowsNamed(t, in, invoicing.Test, coA, "Mesma Chave") != 1 {
		t.Fatal("want one client per company and mode")
	}
}

// idemInProgress: a retry while the first attempt runs (its record claimed
// in the store) is told so, and creates nothing.
func idemInProgress(t *testing.T, w *world, in *instance, key string) {
	body := `{"name":"Em Curso"}`
	sc := idempotency.Scope{Company: coA, Mode: invoicing.Live, Key: "running"}
	store := idempotency.New(idempotency.Config{Redis: w.rdb, Prefix: w.prefix + "idem:"})
	o, err := store.Begin(context.Background(), sc, idempotency.Fingerprint([]byte(clientsPath), []byte(body)))
	if err != nil || o.State != idempotency.Started {
		t.Fatalf("claim: %+v, %v", o, err)
	}
	expectProblem(t, idemPost(t, in, key, coA, "running", body), 409, "idempotency_in_progress")
	if n := rowsNamed(t, in, invoicing.Live, coA, "Em Curso"); n != 0 {
		t.Fatalf("%d clients created while the first attempt runs", n)
	}
	expectProblem(t, idemPost(t, in, key, coA, "running", `{"name":"Outra Coisa"}`), 422, "idempotency_key_reused")
}

// When Redis no longer knows the request (lost, or never told because the
// first attempt's outcome was unknown), the database still refuses a second
// client: the retry meets its own row and answers it.
func TestIdempotencyWithoutItsRecord(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)

	body := `{"name":"Registo Perdido","email":"a@b.ao"}`
	first := idemPost(t, in, k.Key, coA, "lost", body)
	if first.Status != 201 {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	testenv.DeletePrefix(t, w.rdb, w.prefix+"idem:")
	again := idemPost(t, in, k.Key, coA, "lost", body)
	if again.Status != 201 || again.Header.Get("Idempotent-Replayed") != "true" || again.json(t)["id"] != first.json(t)["id"] {
		t.Fatalf("retry after the record was lost: %d %s, want the same client replayed", again.Status, again.Body)
	}
	if n := rowsNamed(t, in, invoicing.Live, coA, "Registo Perdido"); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
	testenv.DeletePrefix(t, w.rdb, w.prefix+"idem:")
	expectProblem(t, idemPost(t, in, k.Key, coA, "lost", `{"name":"Outro Cliente"}`), 422, "idempotency_key_reused")

	// An attempt that committed but was never answered: its row exists, no
	// record does.
	sc := idempotency.Scope{Company: coA, Mode: invoicing.Live, Key: "unknown-outcome"}
	made, err := in.live.CreateClient(context.Background(), coA, invoicing.NewClient{ID: idempotency.ResourceID(sc, "client"), Name: "Resultado Desconhecido"})
	if err != nil {
		t.Fatal(err)
	}
	r := idemPost(t, in, k.Key, coA, "unknown-outcome", `{"name":"Resultado Desconhecido"}`)
	if r.Status != 201 || r.json(t)["id"] != made.ID || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry of a committed attempt: %d %s", r.Status, r.Body)
	}
	if n := rowsNamed(t, in, invoicing.Live, coA, "Resultado Desconhecido"); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}

	// Without a store at all (or Redis down), the database alone holds it.
	bare := w.start(func(c *instanceConfig) { c.noIdem = true })
	one := idemPost(t, bare, k.Key, coA, "no-store", `{"name":"Sem Registo"}`)
	two := idemPost(t, bare, k.Key, coA, "no-store", `{"name":"Sem Registo"}`)
	if one.Status != 201 || two.Status != 201 || one.json(t)["id"] != two.json(t)["id"] || two.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("without a store: %d %s then %d %s", one.Status, one.Body, two.Status, two.Body)
	}
	if n := rowsNamed(t, bare, invoicing.Live, coA, "Sem Registo"); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
}

// send2 posts body with the header given twice (values a and b) and returns
// the status.
func send2(t *testing.T, url, key, company, body, header, a, b string) int {
	t.Helper()
	r, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+key)
	r.Header.Set("X-Company-Id", company)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Add(header, a)
	r.Header.Add(header, b)
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
