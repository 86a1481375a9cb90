package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/actorlet/actorlet/internal/testutil"
	"github.com/actorlet/actorlet/test/env"
)

// chromiumPath is Debian's chromium, which hack/node-env installs.
const chromiumPath = "/usr/bin/chromium"

// browser is one headless chromium tab for one test.
type browser struct {
	t   testing.TB
	ctx context.Context

	mu       sync.Mutex
	problems []string // exceptions and console.error calls of the page
}

// newBrowser starts chromium with a fresh profile. The flags keep it off the
// network: no background requests, component updates, sync or first-run
// fetches, and no host name resolves, so the only address it can reach is
// the loopback one it is pointed at. Without chromium the test is skipped,
// except under CI=true, where it fails, as with the test environment.
func newBrowser(t testing.TB) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium unavailable (CI=true, not skipping): %v", err)
		}
		t.Skipf("chromium unavailable: %v", err)
	}
	var output testutil.LockedBuffer
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1600, 1000),
		chromedp.CombinedOutput(&output),
	)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	// Registered after TempDir's cleanup, so it runs first: chromium has
	// exited before its profile directory is removed.
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		if t.Failed() {
			t.Logf("chromium output:\n%s", output.String())
		}
	})
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int]("1")); err != nil {
		t.Fatalf("start %s: %v", chromiumPath, err)
	}
	b := &browser{t: t, ctx: ctx}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source == "") {
				b.mu.Lock()
				b.problems = append(b.problems, m.String())
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// open loads url and waits until waitFor is visible. It does not wait for
// the page's load event: the dashboard's event stream never ends.
func (b *browser) open(url, waitFor string, within time.Duration) {
	b.t.Helper()
	res, err := chromedp.Call(b.ctx, page.Navigate, page.NavigateParams{URL: url})
	if err == nil && res.ErrorText != "" {
		err = fmt.Errorf("%s", res.ErrorText)
	}
	if err != nil {
		b.t.Fatalf("open %s: %v", url, err)
	}
	b.do("wait for "+waitFor, within, chromedp.WaitVisible(chromedp.CSS(waitFor)))
}

// do runs steps, failing the test if they do not finish within the time.
func (b *browser) do(what string, within time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, within)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page into T.
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// poll evaluates js every 50 ms until it is truthy and returns that value.
func poll[T any](b *browser, what, js string, within time.Duration) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, within+5*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Poll[T](js, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(within)))
	if err != nil {
		b.t.Fatalf("%s: not within %v: %v", what, within, err)
	}
	return v
}

// click clicks with the mouse in the middle of the element that the
// expression js gives, scrolled into view first. The dashboard redraws
// its graph twice a second, so the element is found and clicked at once
// rather than held between two protocol calls.
func (b *browser) click(what, js string) {
	b.t.Helper()
	at := eval[[]float64](b, `(() => {
		const e = `+js+`;
		if (!e) return null;
		e.scrollIntoView({block: "center", inline: "center"});
		const r = e.getBoundingClientRect();
		return [r.x + r.width / 2, r.y + r.height / 2];
	})()`)
	if len(at) != 2 {
		b.t.Fatalf("click %s: not in the page", what)
	}
	b.do("click "+what, 10*time.Second, chromedp.MouseClickXY(at[0], at[1]))
}

// screenshot writes a PNG of the whole page into the artifacts directory
// ($ACTORLET_ARTIFACTS, else results/tmp/dashboard at the repository's
// root, which git ignores).
func (b *browser) screenshot(name string) {
	b.t.Helper()
	dir := os.Getenv("ACTORLET_ARTIFACTS")
	if dir == "" {
		root, err := env.RepoRoot()
		if err != nil {
			b.t.Fatalf("screenshot %s: %v", name, err)
		}
		dir = filepath.Join(root, "results", "tmp", "dashboard")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	b.t.Logf("screenshot: %s", path)
}

// checkNoPageErrors fails the test if the page threw or logged an error.
func (b *browser) checkNoPageErrors() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) > 0 {
		b.t.Errorf("the page reported errors:\n%s", strings.Join(b.problems, "\n"))
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
