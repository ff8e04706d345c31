//go:build !fuzzing

package web

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"seatd/internal/app"
	"seatd/internal/testenv"
)

// chromiumPath finds the browser make test installed (SEATD_CHROMIUM).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SEATD_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("SEATD_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Skip("chromium not installed; make test installs it (scripts/chromium.sh)")
	return ""
}

// outputDir is where screenshots go (not committed).
func outputDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "testoutput", "browser")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser starts a headless Chromium for the test; each call of tab gives
// an isolated browser context (its own cookies), like a second person. A
// page of a tab that writes an error to its console, or whose script
// throws uncaught, fails the test. extra adds flags (a fake camera).
func browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) func() context.Context {
	t.Helper()
	// A browser test spends most of its time waiting on Chromium and on
	// the live socket, not on the CPU: two at a time (go test's -parallel,
	// GOMAXPROCS by default) halve the package's time. Each test has its
	// own Chromium, app and tenant, so they share nothing but Postgres and
	// Redis.
	t.Parallel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	opts = append(opts, extra...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	root, cancelRoot := chromedp.NewContext(allocCtx)
	if err := chromedp.Do(root); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() { cancelRoot(); cancelAlloc() })
	return func() context.Context {
		ctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		logged := consoleErrors(t, ctx)
		t.Cleanup(func() {
			if errs := logged(); len(errs) > 0 {
				t.Errorf("the page wrote errors to the console: %q", errs)
			}
		})
		return ctx
	}
}

// consoleErrors records what the tab's pages write to the console as
// errors, and the exceptions their scripts leave uncaught, from now on;
// the returned func lists them.
func consoleErrors(t *testing.T, tab context.Context) func() []string {
	t.Helper()
	var mu sync.Mutex
	var errs []string
	err := chromedp.Listen(tab, func(ev any) {
		var msg string
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type != runtime.ConsoleAPICalledTypeError {
				return
			}
			var parts []string
			for _, a := range e.Args {
				switch {
				case a.Description != "":
					parts = append(parts, a.Description)
				case len(a.Value) > 0:
					parts = append(parts, string(a.Value))
				default:
					parts = append(parts, string(a.Type))
				}
			}
			msg = strings.Join(parts, " ")
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg = fmt.Sprintf("%s (uncaught) at %s:%d:%d", d.Text, d.URL, d.LineNumber+1, d.ColumnNumber+1)
			if d.Exception != nil && d.Exception.Description != "" {
				msg += ": " + d.Exception.Description
			}
		default:
			return
		}
		mu.Lock()
		errs = append(errs, msg)
		mu.Unlock()
	})
	if err != nil {
		t.Fatalf("listen to the console: %v", err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return withoutAborts(errs)
	}
}

// withoutAborts drops htmx's reports of a request the browser aborted
// (the page moved on while it was in flight: a form submitted, a link
// followed): "htmx:sendAbort, <target>" and the "htmx:afterRequest,
// <target>" htmx logs with it. Nothing failed in the page. The same
// afterRequest beside a network error or a timeout stays.
func withoutAborts(errs []string) []string {
	// A string logged comes as its JSON value, in quotes.
	text := func(e string) string { return strings.Trim(e, `"`) }
	aborted := map[string]bool{}
	for _, e := range errs {
		if target, ok := strings.CutPrefix(text(e), "htmx:sendAbort"); ok {
			aborted[target] = true
		}
	}
	var out []string
	for _, e := range errs {
		if strings.HasPrefix(text(e), "htmx:sendAbort") {
			continue
		}
		if target, ok := strings.CutPrefix(text(e), "htmx:afterRequest"); ok && aborted[target] {
			continue
		}
		out = append(out, e)
	}
	return out
}

// TestWithoutAborts: an aborted request's two reports go, a failed one's
// stay, and so does anything else.
func TestWithoutAborts(t *testing.T) {
	t.Parallel()
	got := withoutAborts([]string{
		`"htmx:afterRequest, [object HTMLElement]"`, `"htmx:sendAbort, [object HTMLElement]"`,
		`"htmx:afterRequest, #cart"`, `"htmx:sendError, #cart"`,
		"TypeError (uncaught) at /static/js/choose.js:1:1",
	})
	want := []string{`"htmx:afterRequest, #cart"`, `"htmx:sendError, #cart"`, "TypeError (uncaught) at /static/js/choose.js:1:1"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// browserApp is a browser test's setup: a Chromium tab maker, the app
// with its background loops, and a server for it.
func browserApp(t *testing.T) (func() context.Context, *app.App, *httptest.Server) {
	newTab := browser(t)
	a := testenv.App(t, generousLimits)
	testenv.Background(t, a)
	return newTab, a, serveApp(t, a, options{}).ts
}

func signIn(base, org, email string) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(base + "/login"),
		chromedp.WaitVisible(css(`input[name=org]`)),
		chromedp.SendKeys(css(`input[name=org]`), org),
		chromedp.SendKeys(css(`input[name=email]`), email),
		chromedp.SendKeys(css(`input[name=password]`), testenv.Password),
		chromedp.Submit(css(`input[name=password]`)),
		chromedp.WaitVisible(css(`[data-testid=nav-user]`)),
	}
}

func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 gives a PNG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(outputDir(t), name)
	if err := os.WriteFile(path, png, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// diagnose records what a browser showed when a step failed: the URL, the
// live-socket state and a screenshot.
func diagnose(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + " live=" + document.body.getAttribute("data-live") + " title=" + document.title`))
	t.Logf("browser state at failure: %s (%v)", state, err)
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		_ = os.WriteFile(filepath.Join(outputDir(t), "failure-"+name+".png"), png, 0o600)
	}
}

// TestBrowserSeatMapLive: two buyers in two isolated browser contexts on
// the same event. A clicks a seat: A sees it as theirs with a countdown, B
// sees it held without reloading. A checks out and pays: B sees it sold.
func TestBrowserSeatMapLive(t *testing.T) {
	newTab, a, srv := browserApp(t)
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 2, 6, 12)
	seat := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)[73] // section B, row A, seat 2
	seatSel := "#seat-" + seat.String()

	ctxA, ctxB := newTab(), newTab()
	tctxA, cancelA := context.WithTimeout(ctxA, 60*time.Second)
	defer cancelA()
	tctxB, cancelB := context.WithTimeout(ctxB, 60*time.Second)
	defer cancelB()
	mapURL := srv.URL + "/e/" + ev.ID.String()
	// The map opens on section A: A opens section B from the overview, B
	// follows a link to it.
	for _, c := range []struct {
		ctx   context.Context
		email string
		url   string
	}{{tctxA, tn.Buyers[0].Email, mapURL}, {tctxB, tn.Buyers[1].Email, mapURL + "?section=B"}} {
		steps := append(signIn(srv.URL, tn.Org.Slug, c.email), chromedp.Navigate(c.url),
			chromedp.WaitVisible(css(`body[data-live=connected]`)), settled())
		if err := chromedp.Do(c.ctx, steps...); err != nil {
			diagnose(t, c.ctx, "open-map")
			t.Fatalf("open map as %s: %v", c.email, err)
		}
		if c.ctx == tctxA {
			if err := openSection(c.ctx, "B", false); err != nil {
				diagnose(t, c.ctx, "open-section")
				t.Fatalf("A opens section B: %v", err)
			}
		}
		if err := chromedp.Do(c.ctx, chromedp.WaitVisible(css(seatSel))); err != nil {
			diagnose(t, c.ctx, "open-map")
			t.Fatalf("section B's seats as %s: %v", c.email, err)
		}
	}
	label, err := chromedp.Run(tctxA, chromedp.AttributeValue(css(seatSel), "aria-label"))
	if err != nil {
		t.Fatal(err)
	}
	if label.Value != "Section B, row A, seat 2, available" {
		t.Fatalf("accessible name %q", label.Value)
	}

	clicked := time.Now()
	if err := click(tctxA, seatSel); err != nil {
		t.Fatalf("A clicks: %v", err)
	}
	if err := chromedp.Do(tctxA, chromedp.WaitVisible(css(seatSel+`[data-mine="true"]`)),
		chromedp.WaitVisible(css(`#cart-`+seat.String()+` [data-left]`))); err != nil {
		t.Fatalf("A holds: %v", err)
	}
	if err := chromedp.Do(tctxB, chromedp.WaitVisible(css(seatSel+`[data-status="held"]:not([data-mine])`))); err != nil {
		t.Fatalf("B sees held: %v", err)
	}
	seen := time.Since(clicked)
	left, err := chromedp.Run(tctxA, chromedp.Text(css(`#cart-`+seat.String()+` [data-until]`)))
	if err != nil {
		t.Fatal(err)
	}
	if left == "" || left == "…" || left == "expired" {
		t.Fatalf("countdown shows %q", left)
	}
	t.Logf("click in A to held in B without reload: %v; A's countdown reads %s", seen.Round(time.Millisecond), left)
	screenshot(t, tctxA, "seatmap-buyer-a-held.png")
	screenshot(t, tctxB, "seatmap-buyer-b-sees-held.png")

	// B cannot take it: the message names the seat.
	if err := click(tctxB, seatSel); err != nil {
		t.Fatalf("B clicks: %v", err)
	}
	if err := chromedp.Do(tctxB, chromedp.WaitVisible(css(`#cart [role=alert]`))); err != nil {
		t.Fatalf("B clicks held seat: %v", err)
	}
	msg, err := chromedp.Run(tctxB, chromedp.Text(css(`#cart [role=alert]`)))
	if err != nil {
		t.Fatal(err)
	}
	if msg != "Seat B-A-2 was just taken by someone else." {
		t.Fatalf("B's message: %q", msg)
	}

	// A checks out and pays; B sees the seat sold.
	if err := chromedp.Do(tctxA,
		chromedp.Click(css(`#cart button[hx-post$="/checkout"]`)),
		chromedp.WaitVisible(css(`#cart form button[type=submit]`)),
		chromedp.Click(css(`#cart form button[type=submit]`)),
		chromedp.WaitVisible(css(`[data-testid=booking-id]`)),
	); err != nil {
		t.Fatalf("A pays: %v", err)
	}
	screenshot(t, tctxA, "booking-confirmed.png")
	if err := chromedp.Do(tctxB, chromedp.WaitVisible(css(seatSel+`[data-status="sold"]`))); err != nil {
		t.Fatalf("B sees sold: %v", err)
	}
	screenshot(t, tctxB, "seatmap-buyer-b-sees-sold.png")
	var n int
	if err := a.Pool.QueryRow(context.Background(), `SELECT count(*) FROM tickets WHERE seat_id = $1`, seat).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d tickets for the seat (%v)", n, err)
	}
}
