package gateway_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/invoicing-ao/gateway/invoicing"
)

// The admin console in a real browser (Debian's Chromium, driven with
// chromedp): sign in, see the overview, open a company, create a key and see
// it listed with its secret shown once, change a limit and see the public
// listener apply it, and see the company's own traffic in its usage chart.
// A screenshot of each page is written for a person to look at
// (CONSOLE_SCREENSHOTS, default a directory under the system's temp dir).
func TestConsoleInBrowser(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is required under CI (.ci/test installs it)")
		}
		t.Skip("chromium not installed")
	}
	shots := os.Getenv("CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join(os.TempDir(), "gateway-console-screenshots")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}

	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	for range 5 { // some traffic of company A for the charts
		do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices?pageSize=2", Key: k.Key, Company: coA})
	}
	do(t, in.pub.URL, req{Path: "/api/v1/v1/clients/not-an-id", Key: k.Key, Company: coA})
	if err := in.usage.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1100))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	defer cancelTimeout()
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	str := func(what string, a chromedp.Action[string]) string {
		t.Helper()
		v, err := chromedp.Run(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	eval := func(what, expr string) bool {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		path := filepath.Join(shots, name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}

	// Sign in: a wrong token is refused, the right one opens the overview.
	console := in.admin.URL + "/console"
	run("open", chromedp.Navigate(console), chromedp.WaitVisible("#signin"))
	shot("1-sign-in")
	run("wrong token", chromedp.SendKeys("#token", "not-the-token"), chromedp.SendKeys("#actor", "ana.silva"),
		chromedp.Click(`#signin button[type=submit]`), chromedp.WaitVisible("#signin-error"))
	msg := str("read error", chromedp.Poll[string](`document.getElementById("signin-error").textContent || null`, chromedp.WithPollingTimeout(30*time.Second)))
	if !strings.Contains(msg, "not the gateway's") {
		t.Fatalf("wrong token: %q", msg)
	}
	run("sign in", chromedp.SetValue("#token", in.adminToken), chromedp.Click(`#signin button[type=submit]`), chromedp.WaitVisible("#overview"))
	active := str("overview", chromedp.Text("#active-today"))
	if strings.TrimSpace(active) != "1" {
		t.Errorf("companies with traffic today: %q, want 1", active)
	}
	if !eval("token storage", `sessionStorage.getItem("adminToken") !== null && document.cookie === "" && localStorage.length === 0`) {
		t.Error("the token is not (only) in session storage")
	}
	shot("2-overview")

	// A company: create a key; its secret is shown once and it is listed.
	run("open company", chromedp.Navigate(console+"#/company/"+coA), chromedp.WaitVisible("#company"))
	run("create key", chromedp.SendKeys("#key-name", "console key"), chromedp.Click(`#key-form button[type=submit]`), chromedp.WaitVisible("#secret-value"))
	secret := str("read secret", chromedp.Text("#secret-value"))
	if !strings.HasPrefix(secret, "igw_live_") {
		t.Fatalf("secret shown: %q", secret)
	}
	if !eval("listed", `[...document.querySelectorAll("#keys-table tr")].some(r => r.textContent.includes("console key"))`) {
		t.Error("the new key is not listed")
	}
	shot("3-key-created")
	if r := do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices?pageSize=1", Key: secret, Company: coA}); r.Status != 200 {
		t.Fatalf("the console's new key on the public listener: %d", r.Status)
	}
	run("dismiss", chromedp.Click(`#secret button`), chromedp.WaitVisible("#company"))
	if eval("secret gone", `document.body.textContent.includes(`+jsString(secret)+`)`) {
		t.Error("the secret is shown again after the page is redrawn")
	}

	// Change the LIVE limit; the public listener applies it.
	run("set limit", chromedp.SetValue("#limit-mode", "LIVE"), chromedp.SetValue("#limit-rate", "0.01"), chromedp.SetValue("#limit-burst", "1"),
		chromedp.Click(`#limit-form button[type=submit]`), chromedp.WaitVisible("#limits"))
	rates := str("read limits", chromedp.Poll[string](`(t => t.startsWith("0.01") ? t : null)([...document.querySelectorAll("#limits td.limit-rate")].map(e => e.textContent).join(","))`,
		chromedp.WithPollingTimeout(30*time.Second)))
	if !strings.HasPrefix(rates, "0.01 rps") {
		t.Fatalf("limits shown after the change: %q", rates)
	}
	// Instances spend leased tokens for up to the lease TTL (500 ms) after a
	// change; the promise is a second.
	time.Sleep(time.Second)
	statuses := map[int]int{}
	for range 3 {
		statuses[do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices?pageSize=1", Key: k.Key, Company: coA}).Status]++
	}
	if statuses[429] == 0 {
		t.Errorf("statuses after the console lowered the limit: %v, want 429s", statuses)
	}

	// The usage chart shows this test's traffic.
	if err := in.usage.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	run("reload", chromedp.Reload(), chromedp.WaitVisible("#company"))
	if !eval("bars", `document.querySelectorAll('svg.chart rect[data-class="2xx"]').length > 0`) {
		t.Error("no 2xx bars in the usage charts")
	}
	// The audit log shows this session's changes under the name signed in with.
	if !eval("audit", `(t => t.includes("key.created") && t.includes("ana.silva") && t.includes("limits.set"))(document.getElementById("audit").textContent)`) {
		t.Errorf("audit log: %s", str("audit text", chromedp.TextContent("#audit")))
	}
	shot("4-company")

	// Roll the console's key: a new secret, once; the old key is still listed.
	run("roll", chromedp.Click(`tr[data-key] button.roll`), chromedp.WaitVisible("#secret-value"))
	rolled := str("rolled secret", chromedp.Text("#secret-value"))
	if !strings.HasPrefix(rolled, "igw_live_") || rolled == secret {
		t.Fatalf("rolled secret %q", rolled)
	}
	shot("5-key-rolled")
}

func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }
