package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/gateway/apidocs"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// The demo starts with nothing installed and its printed curl lines work as
// printed; each fails visibly (a non-zero exit, the problem printed) when
// the request fails, so that a script that copies one notices.
func TestDemoCurlLinesWork(t *testing.T) {
	// Not parallel: the gateway runs in the test process, where its sub-second
	// Redis deadlines (a key's verification, a rate-limit decision) must not
	// compete with the parallel tests for the CPU.
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	printed := runDemo(t)
	var lines []string
	for _, l := range strings.Split(printed, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "curl ") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) < 5 {
		t.Fatalf("too few curl lines:\n%s", printed)
	}
	for i, l := range lines {
		if i := strings.Index(l, "   # "); i > 0 { // the demo's explanatory comments
			l = l[:i]
		}
		if !strings.HasPrefix(l, "curl -sS --fail-with-body ") {
			t.Errorf("%s: does not fail visibly (curl -sS --fail-with-body)", l)
		}
		cmd := exec.Command("bash", "-c", l+" -w '\\n%{http_code}'")
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		s := strings.TrimSpace(string(b))
		nl := strings.LastIndexByte(s, '\n')
		if nl < 0 {
			t.Fatalf("%s: no body: %q", l, s)
		}
		code, body := s[nl+1:], s[:nl]
		if code != "200" && code != "201" {
			t.Errorf("%s\n-> %s %s", l, code, body)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Errorf("%s: not JSON: %s", l, body)
		}
		if i != 0 {
			continue
		}
		// The first line with a key one character short: curl exits 22
		// and prints the problem.
		key := regexp.MustCompile(`igw_live_\w+`).FindString(l)
		out, err := exec.Command("bash", "-c", strings.Replace(l, key, key[:len(key)-1], 1)).Output()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 22 || !strings.Contains(string(out), `"code":"invalid_api_key"`) {
			t.Errorf("%s with a wrong key: exit %v, output %s; want exit 22 and the problem", l, err, out)
		}
	}
}

// The demo says where the explorer, the document and the collection are,
// and each answers there; the explorer's company field starts with the id
// of the demo's company A.
func TestDemoPrintsWhereTheDocsAre(t *testing.T) {
	// Not parallel: the gateway runs in the test process, where its sub-second
	// Redis deadlines (a key's verification, a rate-limit decision) must not
	// compete with the parallel tests for the CPU.
	printed := runDemo(t)
	base := regexp.MustCompile(`ready on (http://\S+)`).FindStringSubmatch(printed)
	if base == nil {
		t.Fatalf("no address in:\n%s", printed)
	}
	for _, path := range []string{apidocs.DocsPath, apidocs.JSONPath, apidocs.YAMLPath, apidocs.CollectionPath} {
		url := base[1] + path
		if !strings.Contains(printed, url+" ") && !strings.Contains(printed, url+")") && !strings.Contains(printed, url+"\n") {
			t.Errorf("the demo does not print %s:\n%s", url, printed)
		}
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("%s: %d", url, res.StatusCode)
		}
		if path == apidocs.DocsPath && !strings.Contains(string(page), `&#34;companyId&#34;:{&#34;value&#34;:&#34;`+gendata.DemoCompanyA) {
			t.Errorf("the explorer's configuration does not fill the company field with %s:\n%s", gendata.DemoCompanyA, page)
		}
	}
	if apidocs.ExampleCompanyID != gendata.DemoCompanyA {
		t.Errorf("the explorer's example company %s is not the demo's company A %s", apidocs.ExampleCompanyID, gendata.DemoCompanyA)
	}
}

// On the demo's SQLite and in-process Redis, a create retried with its
// Idempotency-Key is answered as the first and makes one client.
func TestDemoIdempotentCreate(t *testing.T) {
	// Not parallel: the gateway runs in the test process, where its sub-second
	// Redis deadlines (a key's verification, a rate-limit decision) must not
	// compete with the parallel tests for the CPU.
	printed := runDemo(t)
	base := regexp.MustCompile(`ready on (http://\S+)`).FindStringSubmatch(printed)
	key := regexp.MustCompile(`LIVE full access\s+company A\s+(igw_live_\S+)`).FindStringSubmatch(printed)
	if base == nil || key == nil {
		t.Fatalf("no address or key in:\n%s", printed)
	}
	post := func(body string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, base[1]+"/api/v1/v1/clients", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key[1])
		req.Header.Set("X-Company-Id", gendata.DemoCompanyA)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "demo-retry-1")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	first, b1 := post(`{"name":"Retentativa Demo"}`)
	again, b2 := post(`{"name":"Retentativa Demo"}`)
	if first.StatusCode != 201 || again.StatusCode != 201 || b1 != b2 || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("first %d %s, retry %d %s (replayed %q)", first.StatusCode, b1, again.StatusCode, b2, again.Header.Get("Idempotent-Replayed"))
	}
	other, _ := post(`{"name":"Outro Nome"}`)
	if other.StatusCode != 422 {
		t.Fatalf("the key with another body: %d, want 422", other.StatusCode)
	}
}

// The demo's first minute shows an event: a client created with the printed
// curl line reaches the demo's receiver, which prints it verified.
func TestDemoShowsAnEvent(t *testing.T) {
	// Not parallel: the gateway runs in the test process, where its sub-second
	// Redis deadlines (a key's verification, a rate-limit decision) must not
	// compete with the parallel tests for the CPU.
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	demo := runDemoLive(t)
	printed := demo.String()
	var create string
	for _, l := range strings.Split(printed, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "curl ") && strings.Contains(l, " -d ") {
			create = l
		}
	}
	if create == "" || !strings.Contains(printed, "Webhooks: every event of company A") {
		t.Fatalf("no create-client line or webhooks paragraph:\n%s", printed)
	}
	out, err := exec.Command("bash", "-c", create).Output()
	if err != nil {
		t.Fatalf("%s: %v", create, err)
	}
	var c struct{ ID string }
	if json.Unmarshal(out, &c) != nil || c.ID == "" {
		t.Fatalf("create: %s", out)
	}
	want := regexp.MustCompile(`webhook LIVE client\.created +evt_[a-z2-7]{26}  client "Kianda Lda" ` + c.ID + `  \(signature verified\)  \d+\.\d\d s after the change`)
	waitPrinted(t, demo, want, "a verified client.created for "+c.ID)
	if strings.Contains(demo.String(), "refused") {
		t.Errorf("the demo's receiver refused a delivery:\n%s", demo.String())
	}
}

// The demo says how to reach it from another terminal, and that works: a
// change triggered with the printed environment and command reaches the
// demo's receiver as a TEST event.
func TestDemoFromAnotherTerminal(t *testing.T) {
	// Not parallel: the gateway runs in the test process, where its sub-second
	// Redis deadlines (a key's verification, a rate-limit decision) must not
	// compete with the parallel tests for the CPU.
	demo := runDemoLive(t)
	printed := demo.String()
	m := regexp.MustCompile(`(?m)^  export (.+)$`).FindStringSubmatch(printed)
	trigger := regexp.MustCompile(`(?m)^  go run \./cmd/gateway (events trigger invoice\.paid --company \S+)$`).FindStringSubmatch(printed)
	if m == nil || trigger == nil {
		t.Fatalf("no export line or trigger command:\n%s", printed)
	}
	vars := map[string]string{}
	for _, kv := range strings.Fields(m[1]) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	code, out, errs := gw(t, envOf(vars), strings.Fields(trigger[1])...)
	id := regexp.MustCompile(`: ([0-9a-f-]{36})\.`).FindStringSubmatch(out)
	if code != 0 || id == nil {
		t.Fatalf("%s: %d %s %s", trigger[1], code, out, errs)
	}
	want := regexp.MustCompile(`webhook TEST invoice\.paid +evt_[a-z2-7]{26}  invoice FT \S+ PAID, AGT \w+ ` + id[1] + `  \(signature verified\)`)
	waitPrinted(t, demo, want, "a verified invoice.paid for "+id[1])
	// The demo records its traffic too (its in-process Redis has no
	// BITFIELD): what a limit would have refused of requests just made.
	curl := regexp.MustCompile(`(?m)^  curl -sS --fail-with-body -H "Authorization: Bearer (igw_live_\w+)" -H "X-Company-Id: (\S+)" '([^']+)'`).FindStringSubmatch(printed)
	if curl == nil {
		t.Fatalf("no LIVE curl line:\n%s", printed)
	}
	for range 3 {
		req, _ := http.NewRequest(http.MethodGet, curl[3], nil)
		req.Header.Set("Authorization", "Bearer "+curl[1])
		req.Header.Set("X-Company-Id", curl[2])
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %v", curl[3], resp, err)
		}
		resp.Body.Close()
	}
	testenv.Eventually(t, "limits whatif to count the 3 requests", func() error {
		code, out, errs := gw(t, envOf(vars), "limits", "whatif", "--company", curl[2], "--mode", "LIVE", "--rate", "1", "--burst", "1", "--since", "1h")
		if code != 0 || !strings.Contains(out, ": 3 requests offered") {
			return fmt.Errorf("exit %d: %s %s", code, out, errs)
		}
		return nil
	})
}

// waitPrinted waits until out holds a line matching want.
func waitPrinted(t *testing.T, out *testenv.SyncBuffer, want *regexp.Regexp, what string) {
	t.Helper()
	testenv.Eventually(t, what+" printed", func() error {
		if !want.MatchString(out.String()) {
			return fmt.Errorf("not in:\n%s", out.String())
		}
		return nil
	})
}
