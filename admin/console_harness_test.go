package admin_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// browser is a Chromium tab (Debian's chromium, driven with chromedp) on the
// console of a test's instance. A page's uncaught exception, or anything it
// logs as an error (a refused Content-Security-Policy among them), fails
// the test; failed requests the test makes on purpose are the network's,
// not the page's.
type browser struct {
	t       *testing.T
	ctx     context.Context
	shots   string
	console string // the console's URL

	mu     sync.Mutex
	errors []string
}

// newBrowser starts Chromium (required under CI) for in's console; without
// it, the test is skipped.
func newBrowser(t *testing.T, in *instance) *browser {
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
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1100),
		// The platform team works in Luanda (UTC+1): the page's times are
		// UTC whatever the browser's zone, and the tests see it in one.
		chromedp.Env("TZ=Africa/Luanda"))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	// The page's own waits are bounded (until); the whole tour only by the
	// test's deadline, so that a busy machine slows it rather than fails it.
	deadline := time.Now().Add(10 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-5 * time.Second)
	}
	ctx, cancelTimeout := context.WithDeadline(ctx, deadline)
	b := &browser{t: t, ctx: ctx, shots: shots, console: in.admin.URL + "/console"}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source != "network") {
				b.mu.Lock()
				b.errors = append(b.errors, m.String())
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		cancelAlloc()
		<-done
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errors {
			t.Errorf("the page's console: %s", e)
		}
	})
	return b
}

// run does actions; what names them in a failure.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// text is an element's text as shown.
func (b *browser) text(what, sel string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Text(sel))
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// is evaluates a boolean expression in the page.
func (b *browser) is(what, expr string) bool {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// until evaluates expr, a string or null, until it is a string, for up to
// testenv.Patience (a generous deadline: the machine is shared, and the
// browser tests run beside each other), and returns it.
func (b *browser) until(what, expr string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Poll[string](expr, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(testenv.Patience)))
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// shot writes a screenshot of the whole page for a person to look at.
func (b *browser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
}

// shotAt writes a screenshot of the window with sel at its top, for the
// parts of a long page that a step is about.
func (b *browser) shotAt(name, sel string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`(e => { e.scrollIntoView({block: "start"}); window.scrollBy(0, -12); return true; })(document.querySelector(`+jsString(sel)+`))`)); err != nil {
		b.t.Fatalf("scroll to %s: %v", sel, err)
	}
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
}

// signIn signs in as actor with the admin token.
func (b *browser) signIn(token, actor string) {
	b.t.Helper()
	b.run("sign in", chromedp.Navigate(b.console), chromedp.WaitVisible("#signin"), chromedp.SetValue("#token", token),
		chromedp.SetValue("#actor", actor), chromedp.Click(`#signin button[type=submit]`), chromedp.WaitVisible("#overview"))
}

// open shows a page of the console by its address's fragment.
func (b *browser) open(fragment, visible string) {
	b.t.Helper()
	b.run("open "+fragment, chromedp.Navigate(b.console+fragment), chromedp.WaitVisible(visible))
}

// any chooses a select's first option ("any"), as a person would: Chromium
// selects nothing when a select's value is set to "".
func (b *browser) any(sel string) {
	b.t.Helper()
	b.is("choose the first of "+sel, `(s => { s.selectedIndex = 0; s.dispatchEvent(new Event("change", {bubbles: true})); return true; })(document.querySelector(`+jsString(sel)+`))`)
}

// confirm answers the open dialog with its confirming button.
func (b *browser) confirm(what string) {
	b.t.Helper()
	b.run(what, chromedp.WaitVisible("#ask"), chromedp.Click("#ask-confirm"), chromedp.WaitNotPresent("#ask"))
}

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`, "\n", `\n`).Replace(s) + "'"
}
