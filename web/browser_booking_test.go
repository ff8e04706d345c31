//go:build !fuzzing

package web

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"seatd/internal/testenv"
)

// TestBrowserBookingPrint: the booking page printed (print media
// emulated) is the tickets alone: the navigation, the links and buttons
// are hidden, and every ticket shows with its QR code, kept whole on one
// page (break-inside: avoid).
// Screenshot: testoutput/browser/booking-print.png.
func TestBrowserBookingPrint(t *testing.T) {
	newTab, a, srv := browserApp(t)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	hs := coreHold(t, a, tn.Buyers[0], ev.ID, seats[:3]...)
	b, err := a.Holds.Purchase(context.Background(), actor(tn.Buyers[0]), ev.ID, uuid.NewString(), []uuid.UUID{hs[0].ID, hs[1].ID, hs[2].ID})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(newTab(), 60*time.Second)
	defer cancel()
	steps := append(signIn(srv.URL, tn.Org.Slug, tn.Buyers[0].Email),
		chromedp.Navigate(srv.URL+"/bookings/"+b.ID.String()),
		chromedp.WaitVisible(css(`[data-testid=ticket-qr] svg`)),
		media("print"))
	if err := chromedp.Do(ctx, steps...); err != nil {
		diagnose(t, ctx, "booking-print")
		t.Fatalf("open the booking: %v", err)
	}
	defer func() { _ = chromedp.Do(ctx, media("")) }()
	// shown: an element has a box on the printed page.
	const shown = `function shown(e) { return !!e && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== "hidden"; }`
	for _, c := range []struct{ name, expr string }{
		{"the navigation is hidden", `!shown(document.querySelector("body > header"))`},
		{"no button or link is shown", `Array.from(document.querySelectorAll("button, a, form")).every(function (e) { return !shown(e); })`},
		{"every ticket is shown", fmt.Sprintf(`document.querySelectorAll("[data-testid=ticket]").length === %d &&
			Array.from(document.querySelectorAll("[data-testid=ticket]")).every(shown)`, len(b.Tickets))},
		{"every ticket's QR code is shown, of a size to scan", `Array.from(document.querySelectorAll("[data-testid=ticket]")).every(function (li) {
			var svg = li.querySelector("[data-testid=ticket-qr] svg");
			if (!shown(svg)) return false;
			var r = svg.getBoundingClientRect();
			return r.width >= 150 && r.height >= 150;
		})`},
		{"no ticket is split across pages", `Array.from(document.querySelectorAll("[data-testid=ticket]")).every(function (li) {
			var s = getComputedStyle(li);
			return s.breakInside === "avoid" || s.breakInside === "avoid-page" || s.pageBreakInside === "avoid";
		})`},
	} {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("(function () { "+shown+" return "+c.expr+"; })()"))
		if err != nil || !ok {
			t.Errorf("printed: %s: false (%v)", c.name, err)
		}
	}
	screenshot(t, ctx, "booking-print.png")
}

// TestBrowserScannerCamera: the scanner's camera path. Headless Chromium
// has a fake camera (its flags) but no BarcodeDetector, so a stub put in
// before the page's scripts reads a real ticket's code off the first
// frame. The page offers the camera (a tap reaches it: the hidden answer
// screen does not cover the page), admits the ticket full screen in
// green, and the check-in is in Postgres, once.
func TestBrowserScannerCamera(t *testing.T) {
	newTab := browser(t, chromedp.Flag("use-fake-device-for-media-stream", true), chromedp.Flag("use-fake-ui-for-media-stream", true))
	a := testenv.App(t, generousLimits)
	testenv.Background(t, a)
	srv := serveApp(t, a, options{}).ts
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	hs := coreHold(t, a, tn.Buyers[0], ev.ID, seats[0])
	b, err := a.Holds.Purchase(context.Background(), actor(tn.Buyers[0]), ev.ID, uuid.NewString(), []uuid.UUID{hs[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	code, err := a.TicketKeys.Code(context.Background(), ticketClaims(b, 0))
	if err != nil {
		t.Fatal(err)
	}
	door, err := a.Accounts.Create(context.Background(), tn.Org.ID, "door@"+tn.Org.Slug+".example", testenv.Password, "door")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(newTab(), 90*time.Second)
	defer cancel()
	// The stub reads the code once the camera's video plays, as a real
	// detector would, and nothing after: one scan.
	stub := fmt.Sprintf(`window.BarcodeDetector = class {
		constructor(opts) { this.formats = (opts && opts.formats) || []; }
		static async getSupportedFormats() { return ["qr_code"]; }
		async detect(source) {
			if (window.__detected || !source || !source.videoWidth) return [];
			window.__detected = true;
			return [{ rawValue: %q, format: "qr_code", boundingBox: {}, cornerPoints: [] }];
		}
	};`, code)
	inject := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: stub})
		return chromedp.Void{}, err
	}
	steps := append([]chromedp.Action[chromedp.Void]{inject}, signIn(srv.URL, tn.Org.Slug, door.Email)...)
	steps = append(steps,
		chromedp.Navigate(srv.URL+"/door/e/"+ev.ID.String()+"?entrance=East"),
		waitText(`[data-testid=scan-network]`, "online"),
		chromedp.WaitVisible(css(`#scan-camera`)),
		chromedp.Click(css(`#scan-camera`)),
		chromedp.WaitVisible(css(`#scan-video`)),
		waitText(`[data-testid=scan-verdict]`, "Admitted"),
		poll(`(function () { var r = document.getElementById("scan-result");
			return !r.hidden && r.dataset.result === "admitted" && r.classList.contains("bg-green-700"); })()`))
	if err := chromedp.Do(ctx, steps...); err != nil {
		diagnose(t, ctx, "scanner-camera")
		t.Fatalf("camera scan: %v", err)
	}
	screenshot(t, ctx, "scanner-camera.png")
	var n int
	var entrance string
	if err := a.Pool.QueryRow(context.Background(), `SELECT count(*), coalesce(max(entrance), '') FROM checkins WHERE ticket_id = $1`,
		b.Tickets[0].ID).Scan(&n, &entrance); err != nil {
		t.Fatal(err)
	}
	if n != 1 || entrance != "East" {
		t.Fatalf("%d check-ins at %q, want 1 at East", n, entrance)
	}
}
