package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// Two `gateway serve` processes without cursorSecret share the cursors'
// key that the first made in Redis: a page's cursor from one is the next
// page on the other. Each names in its start-up line what keys them.
func TestServeSharesItsCursorKey(t *testing.T) {
	t.Parallel()
	live, test := testenv.Postgres(t), testenv.Postgres(t)
	if _, err := gendata.SetUpSmall(context.Background(), live, test, 3); err != nil {
		t.Fatal(err)
	}
	_, prefix := testenv.Redis(t)
	set := map[string]string{"GATEWAY_REDIS_PREFIX": prefix, "GATEWAY_LIVE_DATABASE_URL": live, "GATEWAY_TEST_DATABASE_URL": test,
		"GATEWAY_HISTORY_DATABASE_URL": testenv.Postgres(t), "GATEWAY_WEBHOOK_SECRETS_KEY": testSecretsKey}
	env := serveEnv(t, testenv.RedisURL(), set)
	code, key, errs := runCLI(env, "keys", "create", "--company", gendata.DemoCompanyA, "--mode", "LIVE", "--scopes", "invoices:read", "--quiet", "--config", "../../configs/gateway.yaml")
	if code != 0 {
		t.Fatalf("keys create: %d %s", code, errs)
	}
	key = strings.TrimSpace(key)
	a, logsA := startServe(t, env)
	b, _ := startServe(t, env)
	if want := `"cursors":"the deployment's own key, made once in Redis (` + prefix + `cursor:key)"`; !strings.Contains(logsA.String(), want) {
		t.Errorf("the start-up line does not say what keys the cursors (%s):\n%s", want, logsA.String())
	}
	get := func(base, query string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+base+"/api/v1/v1/invoices?"+query, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("X-Company-Id", gendata.DemoCompanyA)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		return res.StatusCode, m
	}
	code, first := get(a, "pageSize=1")
	cursor, _ := first["nextCursor"].(string)
	if code != 200 || cursor == "" {
		t.Fatalf("first page on A: %d %v", code, first)
	}
	if code, next := get(b, "pageSize=1&cursor="+url.QueryEscape(cursor)); code != 200 {
		t.Errorf("A's cursor on B: %d %v", code, next)
	}

	_, logs := startServe(t, serveEnv(t, testenv.RedisURL(), map[string]string{"GATEWAY_REDIS_PREFIX": prefix, "GATEWAY_CURSOR_SECRET": "s3cret-of-the-operators",
		"GATEWAY_WEBHOOK_SECRETS_KEY": testSecretsKey}))
	if !strings.Contains(logs.String(), `"cursors":"cursorSecret"`) || strings.Contains(logs.String(), "s3cret-of-the-operators") {
		t.Errorf("with cursorSecret set, the start-up line:\n%s", logs.String())
	}
}
