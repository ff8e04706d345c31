package door_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/door"
	"seatd/internal/testenv"
	"seatd/internal/ticket"
	"seatd/static"
)

// The site's Content-Security-Policy (web/middleware.go): the scanner
// must work under it, with no inline script.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'"

// scannerSite serves static/js/scanner.js as the site does, a page that
// imports it, and the door's three routes for f's door staff, in the
// shape the JSON API will give them (door.Result, door.KeyInfo, {results}).
// down makes the check-in route answer 503, as a failing server would.
func scannerSite(t *testing.T, f *fixture, down *atomic.Bool) *httptest.Server {
	t.Helper()
	assets, err := static.New()
	if err != nil {
		t.Fatal(err)
	}
	write := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	fail := func(w http.ResponseWriter, err error) {
		status := http.StatusInternalServerError
		switch apperr.CodeOf(err) {
		case apperr.NotFound:
			status = http.StatusNotFound
		case apperr.Invalid:
			status = http.StatusUnprocessableEntity
		case apperr.Forbidden:
			status = http.StatusForbidden
		}
		write(w, status, map[string]string{"error": string(apperr.CodeOf(err)), "message": err.Error()})
	}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", assets)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprint(w, `<!doctype html><title>scanner</title><script type="module" src="/test.js"></script>`)
	})
	mux.HandleFunc("GET /test.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = fmt.Fprintf(w, `import * as m from %q; window.scannerModule = m;`, assets.Path("js/scanner.js"))
	})
	event := f.ev.ID.String()
	mux.HandleFunc("GET /api/v1/events/"+event+"/checkins/key", func(w http.ResponseWriter, r *http.Request) {
		k, err := f.door.Key(r.Context(), f.staff, f.ev.ID)
		if err != nil {
			fail(w, err)
			return
		}
		write(w, http.StatusOK, k)
	})
	mux.HandleFunc("POST /api/v1/events/"+event+"/checkins", func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			write(w, http.StatusServiceUnavailable, map[string]string{"error": "unavailable"})
			return
		}
		var in struct {
			Code      string    `json:"code"`
			Entrance  string    `json:"entrance"`
			ScannedAt time.Time `json:"scanned_at"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			write(w, http.StatusBadRequest, map[string]string{"error": "bad_request"})
			return
		}
		res, err := f.door.Admit(r.Context(), f.staff, f.ev.ID, in.Code, in.Entrance, in.ScannedAt)
		if err != nil {
			fail(w, err)
			return
		}
		status := http.StatusConflict
		if res.Outcome == door.Admitted {
			status = http.StatusCreated
		}
		write(w, status, res)
	})
	mux.HandleFunc("POST /api/v1/events/"+event+"/checkins/sync", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Scans []door.Scan `json:"scans"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			write(w, http.StatusBadRequest, map[string]string{"error": "bad_request"})
			return
		}
		res, err := f.door.Sync(r.Context(), f.staff, f.ev.ID, in.Scans)
		if err != nil {
			fail(w, err)
			return
		}
		write(w, http.StatusOK, map[string]any{"results": res})
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// chromium starts a headless Chromium (SEATD_CHROMIUM, or chromium on the
// PATH) and returns a tab whose uncaught script errors fail the test.
func chromium(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("SEATD_CHROMIUM")
	if path == "" {
		p, err := exec.LookPath("chromium")
		if err != nil {
			t.Skip("chromium not installed; make test installs it (scripts/chromium.sh)")
		}
		path = p
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tab, cancelTab := chromedp.NewContext(alloc)
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var mu sync.Mutex
	var thrown []string
	if err := chromedp.Listen(tab, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			mu.Lock()
			thrown = append(thrown, e.ExceptionDetails.Text)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		mu.Lock()
		defer mu.Unlock()
		if len(thrown) > 0 {
			t.Errorf("uncaught script errors: %q", thrown)
		}
	})
	return tab
}

// offline cuts the tab off the network (requests fail, navigator.onLine
// is false), or connects it again.
func offline(off bool) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := cdp.Call(ctx, t, network.OverrideNetworkState, network.OverrideNetworkStateParams{
			Offline: off, DownloadThroughput: -1, UploadThroughput: -1}); err != nil {
			return chromedp.Void{}, err
		}
		conds := []*network.Conditions{}
		if off {
			conds = append(conds, &network.Conditions{Offline: true, DownloadThroughput: -1, UploadThroughput: -1})
		}
		_, err := cdp.Call(ctx, t, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
			MatchedNetworkConditions: conds})
		return chromedp.Void{}, err
	}
}

// js runs an async function body in the page (with the module as m and
// the scanner as s, once made) and decodes what it returns.
func js[T any](t *testing.T, tab context.Context, body string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](`(async () => { const m = window.scannerModule; const s = window.s; `+body+` })()`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return v
}

// scanResult is what Scanner.scan answers.
type scanResult struct {
	Result   string    `json:"result"`
	Ticket   uuid.UUID `json:"ticket"`
	Seat     door.Seat `json:"seat"`
	At       string    `json:"at"`
	Entrance string    `json:"entrance"`
	Offline  bool      `json:"offline"`
}

// TestScannerInBrowser: the scanner module verifies Go-signed codes with
// WebCrypto in Chromium under the site's CSP and refuses forged and
// foreign ones; it admits through the server while online; cut off the
// network, or facing a failing server, it keeps admitting from the key
// and lists it downloaded, refuses the revoked ticket and a second scan,
// keeps what it admitted and queued across a reload of its page, and
// syncs the queue when the server is back, which records the scans as
// offline admissions.
func TestScannerInBrowser(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.buy(t, 5)
	online, offline1, offline2, revoked, spare := b.Tickets[0], b.Tickets[1], b.Tickets[2], b.Tickets[3], b.Tickets[4]
	f.cancel(t, b, revoked)
	var down atomic.Bool
	srv := scannerSite(t, f, &down)
	tab := chromium(t)
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	js[bool](t, tab, `while (!window.scannerModule) await new Promise(r => setTimeout(r, 10)); return true;`)

	// The module alone: a Go-signed code verifies with the event's key.
	k, err := f.door.Key(context.Background(), f.staff, f.ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	code := f.code(t, online)
	forged := []byte(code)
	forged[120] = map[bool]byte{true: 'B', false: 'A'}[forged[120] == 'A']
	otherEvent := testenv.NewEvent(t, f.a, f.tn.Org.ID, 1, 1, 1)
	other, err := f.keys.Code(context.Background(), ticket.Claims{Org: f.tn.Org.ID, Event: otherEvent.ID, Ticket: uuid.New(), Seat: uuid.New()})
	if err != nil {
		t.Fatal(err)
	}
	verify := func(c string) map[string]any {
		return js[map[string]any](t, tab, fmt.Sprintf(`const key = await m.importPublicKey(%q); return await m.verifyCode(key, %q, %q, %q);`,
			k.PublicKey, k.Org, k.Event, c))
	}
	if v := verify(code); v["ok"] != true || v["ticket"] != online.ID.String() || v["seat"] != online.SeatID.String() {
		t.Fatalf("a Go-signed code in the browser: %v", v)
	}
	if v := verify(code + "\n"); v["ok"] != true {
		t.Fatalf("a typed code ending in a newline: %v", v)
	}
	for name, c := range map[string]string{"forged": string(forged), "truncated": code[:150], "another event's": other, "empty": ""} {
		want := "forged"
		if name == "another event's" {
			want = "not_found"
		}
		if v := verify(c); v["ok"] != false || v["result"] != want {
			t.Errorf("%s code: %v, want %s", name, v, want)
		}
	}
	if v := js[map[string]any](t, tab, fmt.Sprintf(`const key = await m.importPublicKey(%q); return await m.verifyCode(key, %q, %q, %q);`,
		k.PublicKey, uuid.NewString(), k.Event, code)); v["ok"] != false || v["result"] != "forged" {
		t.Errorf("a code checked as another organization's: %v", v)
	}

	// Online: the server admits.
	newScanner := fmt.Sprintf(`window.s = new m.Scanner({event: %q, entrance: "North"});`, f.ev.ID)
	js[bool](t, tab, newScanner+` await window.s.refresh(); return true;`)
	scan := func(c string) scanResult {
		return js[scanResult](t, tab, fmt.Sprintf(`return await s.scan(%q);`, c))
	}
	if r := scan(code); r.Result != "admitted" || r.Offline || r.Ticket != online.ID || r.Seat.Label != "A-A-1" || r.Entrance != "North" {
		t.Fatalf("online scan: %+v", r)
	}

	// Offline: the scanner decides alone.
	if err := chromedp.Do(tab, offline(true)); err != nil {
		t.Fatal(err)
	}
	if r := scan(f.code(t, offline1)); r.Result != "admitted" || !r.Offline || r.Ticket != offline1.ID || r.Seat.Label != "A-A-2" {
		t.Fatalf("offline scan: %+v", r)
	}
	for name, tc := range map[string]struct {
		code, want string
	}{
		"the same ticket again":      {f.code(t, offline1), "already_admitted"},
		"the ticket admitted online": {code, "already_admitted"},
		"a revoked ticket":           {f.code(t, revoked), "cancelled"},
		"a forged code":              {string(forged), "forged"},
		"another event's ticket":     {other, "not_found"},
	} {
		if r := scan(tc.code); r.Result != tc.want || !r.Offline {
			t.Errorf("offline, %s: %+v, want %s", name, r, tc.want)
		}
	}
	// The network is back but the server fails: the scanner still
	// decides alone, and a reload of its page (a phone that locked) keeps
	// what it admitted, its queue and the key.
	if err := chromedp.Do(tab, offline(false)); err != nil {
		t.Fatal(err)
	}
	down.Store(true)
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	js[bool](t, tab, `while (!window.scannerModule) await new Promise(r => setTimeout(r, 10)); const m2 = window.scannerModule; `+
		strings.Replace(newScanner, "new m.", "new m2.", 1)+` return true;`)
	if n := js[int](t, tab, `return s.pending;`); n != 1 {
		t.Fatalf("%d scans queued after a reload, want 1", n)
	}
	if r := scan(f.code(t, offline1)); r.Result != "already_admitted" || !r.Offline {
		t.Fatalf("after a reload, the same ticket: %+v", r)
	}
	if r := scan(f.code(t, offline2)); r.Result != "admitted" || !r.Offline {
		t.Fatalf("scan while the server fails: %+v", r)
	}
	down.Store(false)

	// Back: the queue syncs; the server has both offline admissions.
	results := js[[]door.Result](t, tab, `return await s.sync();`)
	if len(results) != 2 || results[0].Outcome != door.Admitted || results[1].Outcome != door.Admitted {
		t.Fatalf("sync: %+v", results)
	}
	if n := js[int](t, tab, `return s.pending;`); n != 0 {
		t.Fatalf("%d scans still queued", n)
	}
	if n := f.count(t, `SELECT count(*) FROM checkins WHERE org_id = $1 AND event_id = $2 AND offline AND entrance = 'North'`); n != 2 {
		t.Fatalf("%d offline check-ins recorded, want 2", n)
	}
	if r := scan(f.code(t, spare)); r.Result != "admitted" || r.Offline {
		t.Fatalf("online again: %+v", r)
	}
}
