//go:build !fuzzing

package web

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/app"
	"seatd/internal/hold"
	"seatd/internal/seed"
	"seatd/internal/testenv"
)

// poll waits until the page expression is true.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second))
}

// settled waits until no htmx request is under way and no swap is still
// settling: the refetch made when the socket opens must be back before a
// test opens a section, or it would put the section shown before over the
// one opened; and htmx wires a swapped element's triggers only once it
// settled, so a click before that does nothing.
func settled() chromedp.Action[chromedp.Void] {
	return poll(`!document.querySelector(".htmx-request, .htmx-swapping, .htmx-settling")`)
}

// openSection opens a section from the overview the way a person does: a
// click (or a touch tap) at the middle of its outline, an SVG link.
func openSection(ctx context.Context, label string, tap bool) error {
	sel := fmt.Sprintf(`a[data-section-key=%q]`, label)
	if err := chromedp.Do(ctx, chromedp.WaitReady(css(sel)), settled()); err != nil {
		return err
	}
	xy, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](fmt.Sprintf(
		`(function(){var r=document.querySelector(%q).getBoundingClientRect();return [r.x+r.width/2,r.y+r.height/2]})()`, sel)))
	if err != nil {
		return err
	}
	act := chromedp.MouseClickXY(xy[0], xy[1])
	if tap {
		act = chromedp.TapXY(xy[0], xy[1])
	}
	if err := chromedp.Do(ctx, act); err != nil {
		return err
	}
	// Polled in the page: the swap replaces the SVG, whose new nodes the
	// DOM-event wait does not always see.
	return chromedp.Do(ctx, poll(fmt.Sprintf(`!!document.querySelector(%q)`, sel+`[aria-current="true"]`)), settled())
}

// clippedSeats counts the open section's seats that lie (partly) outside
// the visible part of their panel, across its width.
const clippedSeats = `(() => { const p = document.querySelector("#venue [data-fit-panel]").getBoundingClientRect();
	return [...document.querySelectorAll("#venue .seat")].filter(s => { const r = s.getBoundingClientRect();
		return r.left < p.left - 0.5 || r.right > p.right + 0.5; }).length; })()`

// freeIs waits until the overview says n seats of the section are free:
// its count, its accessible name and its shade's data all agree.
func freeIs(label string, n, total int) chromedp.Action[chromedp.Void] {
	return poll(fmt.Sprintf(`(function () {
		var a = document.querySelector('a[data-section-key=%q]');
		return !!a && a.getAttribute("data-available") === %q && a.querySelector("[data-free]").textContent === %q &&
			a.getAttribute("aria-label") === %q;
	})()`, label, strconv.Itoa(n), strconv.Itoa(n)+" free", fmt.Sprintf("Section %s, %d of %d seats free", label, n, total)))
}

// outside lists the sections whose outline is not wholly inside the
// viewport.
const outside = `Array.from(document.querySelectorAll("a[data-section-key]")).filter(function (a) {
	var r = a.getBoundingClientRect();
	return r.width === 0 || r.left < 0 || r.top < 0 || r.right > window.innerWidth || r.bottom > window.innerHeight;
}).map(function (a) { return a.getAttribute("data-section-key"); })`

func viewport(w, h int64, phone bool) chromedp.Action[chromedp.Void] {
	if phone {
		return chromedp.EmulateViewport(w, h, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	return chromedp.EmulateViewport(w, h)
}

// sectionSeats lists a section's seats in idx order.
func sectionSeats(t *testing.T, a *app.App, ev uuid.UUID, label string) []uuid.UUID {
	t.Helper()
	rows, err := a.Pool.Query(context.Background(), `SELECT s.id FROM seats s JOIN sections c ON c.id = s.section_id
		WHERE s.event_id = $1 AND c.label = $2 ORDER BY s.idx`, ev, label)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil || len(ids) == 0 {
		t.Fatalf("seats of section %s: %d (%v)", label, len(ids), err)
	}
	return ids
}

// TestBrowserMapWholeVenue: at 1 400 × 1 000 and on a 390 × 844 phone
// with touch, every section of the demo venue is on screen at first sight
// with its free seats; tapping one opens its seats, and on the desktop
// the keyboard does the same (Enter on a section; the focus lands on the
// section's heading, before its seats), and Back returns to the section
// first shown, still live. Screenshots:
// testoutput/browser/map-desktop.png and map-phone.png.
func TestBrowserMapWholeVenue(t *testing.T) {
	newTab, a, srv := browserApp(t)
	tn := testenv.NewTenant(t, a, 1)
	ctx := context.Background()
	v, err := a.Store.Charts.Save(ctx, tn.Org.ID, uuid.Nil, seed.DemoChart("Main Hall"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	str := func(s string) *string { return &s }
	org := hold.Actor{Org: tn.Org.ID, User: tn.Organizer.ID, Role: hold.RoleOrganizer}
	e, err := a.Events.Create(ctx, org, hold.EventInput{Name: str("Gala Night"), Venue: str("Main Hall"),
		StartsAt: str(now.Add(48 * time.Hour).Format(time.RFC3339)), TimeZone: str("UTC"), ChartID: str(v.ChartID.String()),
		OnSaleAt: str(now.Add(-time.Hour).Format(time.RFC3339)), SalesEndAt: str(now.Add(24 * time.Hour).Format(time.RFC3339)),
		Prices: seed.DemoPrices})
	if err != nil {
		t.Fatal(err)
	}
	publishEvent(t, a, tn, e.ID)
	// Some life: six seats of B held.
	coreHold(t, a, tn.Buyers[0], e.ID, sectionSeats(t, a, e.ID, "B")[40:46]...)
	inD := sectionSeats(t, a, e.ID, "D")[0] // a seat of the balcony
	for _, size := range []struct {
		name   string
		w, h   int64
		mobile bool
		file   string
	}{{"desktop", 1400, 1000, false, "map-desktop.png"}, {"phone", 390, 844, true, "map-phone.png"}} {
		t.Run(size.name, func(t *testing.T) {
			tab, cancel := context.WithTimeout(newTab(), 60*time.Second)
			defer cancel()
			steps := append(signIn(srv.URL, tn.Org.Slug, tn.Buyers[0].Email),
				viewport(size.w, size.h, size.mobile),
				chromedp.Navigate(srv.URL+"/e/"+e.ID.String()),
				chromedp.WaitVisible(css(`body[data-live=connected]`)), settled())
			if err := chromedp.Do(tab, steps...); err != nil {
				diagnose(t, tab, "whole-venue-"+size.name)
				t.Fatal(err)
			}
			out, err := chromedp.Run(tab, chromedp.Evaluate[[]string](outside))
			if err != nil {
				t.Fatal(err)
			}
			n, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll("a[data-section-key]").length`))
			if err != nil || n != 4 || len(out) > 0 {
				t.Fatalf("%d sections on the overview, outside the %dx%d viewport: %v (%v)", n, size.w, size.h, out, err)
			}
			if err := chromedp.Do(tab, freeIs("B", 750-6, 750)); err != nil {
				t.Fatalf("section B's count: %v", err)
			}
			if err := openSection(tab, "D", size.mobile); err != nil {
				diagnose(t, tab, "open-d-"+size.name)
				t.Fatalf("open section D: %v", err)
			}
			if err := chromedp.Do(tab, chromedp.WaitVisible(css("#seat-"+inD.String()))); err != nil {
				diagnose(t, tab, "open-d-"+size.name)
				t.Fatalf("section D's seats: %v", err)
			}
			// Only the open section's seats are elements.
			if n, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll("#venue .seat").length`)); err != nil || n != 600 {
				t.Fatalf("%d seats on the page with the balcony open, want its 600 (%v)", n, err)
			}
			// The open section fits its panel: no seat is cut off at its
			// edges, at either size.
			if err := chromedp.Do(tab, poll(clippedSeats+` === 0`)); err != nil {
				n, _ := chromedp.Run(tab, chromedp.Evaluate[int](clippedSeats))
				diagnose(t, tab, "fit-"+size.name)
				t.Fatalf("%d of section D's 600 seats cut off by the panel at %dx%d", n, size.w, size.h)
			}
			if size.mobile {
				// Zoomed out on a phone, "Larger seats" shows them at full
				// size and the panel pans instead; "Fit to screen" goes back.
				full := `(() => { const s = document.querySelector("#venue .seat").getBoundingClientRect(), p = document.querySelector("#venue [data-fit-panel]");
					return s.width > 21 && p.scrollWidth > p.clientWidth; })()`
				if err := chromedp.Do(tab, chromedp.Click(css("#venue [data-fit-toggle]")), poll(full),
					chromedp.Click(css("#venue [data-fit-toggle]")), poll(clippedSeats+` === 0`)); err != nil {
					diagnose(t, tab, "fit-toggle")
					t.Fatalf("larger seats and back on a phone: %v", err)
				}
			}
			png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(outputDir(t), size.file), png, 0o600); err != nil {
				t.Fatal(err)
			}
			if size.mobile {
				return
			}
			// Back leaves section D for the map as first opened (A).
			if err := chromedp.Do(tab, poll(`location.search === "?section=D"`), chromedp.Evaluate[chromedp.Void](`history.back()`),
				poll(`location.search === "" && !!document.querySelector('a[data-section-key="A"][aria-current="true"]') &&
					!!document.querySelector("#venue .seat")`), settled(), freeIs("B", 750-6, 750)); err != nil {
				diagnose(t, tab, "back")
				t.Fatalf("back from section D: %v", err)
			}
			// ... and stays live.
			coreHold(t, a, tn.Buyers[0], e.ID, sectionSeats(t, a, e.ID, "C")[0])
			if err := chromedp.Do(tab, freeIs("C", 749, 750)); err != nil {
				diagnose(t, tab, "back-live")
				t.Fatalf("the map is not live after Back: %v", err)
			}
			// The keyboard: Enter on section C opens it and puts the
			// focus on its heading, from where Tab reaches its seats (past
			// "Larger seats" when the section was zoomed out to fit).
			if err := chromedp.Do(tab, chromedp.Focus(css(`a[data-section-key="C"]`)), chromedp.KeyEvent("\r"),
				poll(`!!document.querySelector('a[data-section-key="C"][aria-current="true"]')`), settled(),
				poll(`document.activeElement && document.activeElement.id === "section-title"`),
				chromedp.KeyEvent("\t")); err != nil {
				diagnose(t, tab, "keyboard")
				t.Fatalf("open section C with the keyboard: %v", err)
			}
			if on, _ := chromedp.Run(tab, chromedp.Evaluate[bool](`document.activeElement.matches("[data-fit-toggle]")`)); on {
				if err := chromedp.Do(tab, chromedp.KeyEvent("\t")); err != nil {
					t.Fatal(err)
				}
			}
			if err := chromedp.Do(tab,
				poll(`document.activeElement && document.activeElement.matches("#venue .seat") &&
					document.activeElement.getAttribute("aria-label").indexOf("Section C, row ") === 0`)); err != nil {
				diagnose(t, tab, "keyboard")
				t.Fatalf("open section C with the keyboard: %v", err)
			}
		})
	}
}

// liveCounts: buyer 1 (tab) has section A open; buyer 2 holds a seat of
// section C: buyer 1's overview says one seat fewer is free in C without a
// reload, and one more again when buyer 2 lets it go. Section A stays open
// throughout and C's seat is never drawn (its frames, which have no
// element to land on, write no error to the console: see browser).
func liveCounts(t *testing.T, tab context.Context, a *app.App, tn testenv.Tenant, ev, inC uuid.UUID, perSection int) {
	t.Helper()
	if err := chromedp.Do(tab, freeIs("C", perSection, perSection)); err != nil {
		diagnose(t, tab, "count-before")
		t.Fatalf("C before: %v", err)
	}
	h := coreHold(t, a, tn.Buyers[1], ev, inC)
	if err := chromedp.Do(tab, freeIs("C", perSection-1, perSection)); err != nil {
		diagnose(t, tab, "count-held")
		t.Fatalf("C after buyer 2's hold: %v", err)
	}
	if _, err := a.Holds.Release(context.Background(), actor(tn.Buyers[1]), h[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, freeIs("C", perSection, perSection)); err != nil {
		diagnose(t, tab, "count-released")
		t.Fatalf("C after buyer 2's release: %v", err)
	}
	ok, err := chromedp.Run(tab, chromedp.Evaluate[bool](fmt.Sprintf(`!!document.querySelector('a[data-section-key="A"][aria-current="true"]') &&
		!document.getElementById(%q)`, "seat-"+inC.String())))
	if err != nil || !ok {
		t.Fatalf("section A is no longer the open one, or C's seat is drawn (%v)", err)
	}
}

// olderVenue makes the page fetch its venue again, as it does when its
// socket (re)opens, and holds the server's answer back (CDP Fetch at the
// response stage) while change runs: the page then swaps in a map rendered
// before the change, after the change's frame has reached it.
func olderVenue(t *testing.T, tab context.Context, change func()) {
	t.Helper()
	target, err := chromedp.Run(tab, func(_ context.Context, t *chromedp.Target) (*chromedp.Target, error) { return t, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cdp.Call(tab, target, fetch.Enable, fetch.EnableParams{
		Patterns: []*fetch.RequestPattern{{URLPattern: "*/map*", RequestStage: fetch.RequestStageResponse}}}); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = cdp.Call(tab, target, fetch.Disable, cdp.Empty{}) }()
	wait, cancel := context.WithTimeout(tab, 15*time.Second)
	defer cancel()
	paused := cdp.Events(wait, target, fetch.RequestPaused)
	if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`(function () {
		var v = document.getElementById("venue");
		v.setAttribute("data-old", "");
		htmx.trigger(v, "resync");
		return true;
	})()`)); err != nil {
		t.Fatal(err)
	}
	var id fetch.RequestID
	for e, err := range paused {
		if err != nil {
			t.Fatalf("the venue's fetch never reached the page: %v", err)
		}
		id = e.RequestID
		break
	}
	change()
	if _, err := cdp.Call(tab, target, fetch.ContinueResponse, fetch.ContinueResponseParams{RequestID: id}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, poll(`!document.querySelector("#venue[data-old]")`), settled()); err != nil {
		t.Fatalf("the older venue was not swapped in: %v", err)
	}
}

// TestBrowserMapLiveCounts: the overview's counts follow another buyer's
// hold and release in a section the page does not show (liveCounts), and
// a section opened afterwards shows the seat as it is then. A map rendered
// before a change but swapped in after the change's frame (the refetch
// when the socket opens, racing a change) does not take the page back:
// neither the section's count nor the open section's seat.
func TestBrowserMapLiveCounts(t *testing.T) {
	newTab, a, srv := browserApp(t)
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 3, 4, 8) // A, B, C of 32 seats
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	inC := seats[64+9]
	tab, cancel := context.WithTimeout(newTab(), 60*time.Second)
	defer cancel()
	if err := chromedp.Do(tab, append(signIn(srv.URL, tn.Org.Slug, tn.Buyers[0].Email),
		chromedp.Navigate(srv.URL+"/e/"+ev.ID.String()),
		chromedp.WaitVisible(css(`body[data-live=connected]`)), settled())...); err != nil {
		diagnose(t, tab, "counts-open")
		t.Fatal(err)
	}
	liveCounts(t, tab, a, tn, ev.ID, inC, 32)
	// Held again while C is not shown; opening C draws it held.
	coreHold(t, a, tn.Buyers[1], ev.ID, inC)
	if err := chromedp.Do(tab, freeIs("C", 31, 32)); err != nil {
		t.Fatalf("C after the second hold: %v", err)
	}
	if err := openSection(tab, "C", false); err != nil {
		t.Fatalf("open C: %v", err)
	}
	if err := chromedp.Do(tab, chromedp.WaitVisible(css("#seat-"+inC.String()+`[data-status="held"]:not([data-mine])`)), freeIs("C", 31, 32)); err != nil {
		diagnose(t, tab, "counts-open-c")
		t.Fatalf("C opened: %v", err)
	}

	// The race: section C open, a seat of A held and one of C released
	// while the venue's answer (rendered before) is on its way.
	inA := seats[3]
	olderVenue(t, tab, func() {
		coreHold(t, a, tn.Buyers[1], ev.ID, inA)
		if _, err := a.Holds.Release(context.Background(), actor(tn.Buyers[1]), heldOf(t, a, inC), ""); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(tab, freeIs("A", 31, 32), freeIs("C", 32, 32),
			chromedp.WaitVisible(css("#seat-"+inC.String()+`[data-status="available"]`))); err != nil {
			t.Fatalf("frames before the older venue: %v", err)
		}
	})
	if err := chromedp.Do(tab, freeIs("A", 31, 32), freeIs("C", 32, 32),
		chromedp.WaitVisible(css("#seat-"+inC.String()+`[data-status="available"]`))); err != nil {
		diagnose(t, tab, "counts-older-venue")
		t.Fatalf("after the older venue: %v", err)
	}
}

// heldOf is the active hold on a seat.
func heldOf(t *testing.T, a *app.App, seat uuid.UUID) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	if err := a.Pool.QueryRow(context.Background(), `SELECT id FROM seat_holds WHERE seat_id = $1 AND status = 'active'`, seat).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestBrowserMapLargeEventLive: on a 20 000-seat event the page holds one
// section's seats, not the venue's; one buyer's hold appears on another's
// map without reload, and the overview's counts follow holds in sections
// not shown.
func TestBrowserMapLargeEventLive(t *testing.T) {
	newTab, a, srv := browserApp(t)
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 8, 50, 50) // 20 000 seats, 2 500 a section
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	inA, inC := seats[120], seats[2*2500+777]
	mapURL := srv.URL + "/e/" + ev.ID.String()

	ctxA, cancelA := context.WithTimeout(newTab(), 90*time.Second)
	defer cancelA()
	ctxB, cancelB := context.WithTimeout(newTab(), 90*time.Second)
	defer cancelB()
	for _, c := range []struct {
		ctx   context.Context
		email string
		url   string
	}{{ctxA, tn.Buyers[0].Email, mapURL + "?section=H"}, {ctxB, tn.Buyers[1].Email, mapURL}} {
		if err := chromedp.Do(c.ctx, append(signIn(srv.URL, tn.Org.Slug, c.email), chromedp.Navigate(c.url),
			chromedp.WaitVisible(css(`body[data-live=connected]`)), settled())...); err != nil {
			diagnose(t, c.ctx, "large-open")
			t.Fatal(err)
		}
	}
	nodes, err := chromedp.Run(ctxB, chromedp.Evaluate[int](`document.getElementsByTagName("*").length`))
	if err != nil || nodes > 8000 {
		t.Fatalf("%d DOM nodes for a 20 000-seat map (%v)", nodes, err)
	}
	if err := openSection(ctxA, "A", false); err != nil {
		t.Fatalf("A opens section A: %v", err)
	}
	if err := chromedp.Do(ctxA, chromedp.Click(css("#seat-"+inA.String())),
		chromedp.WaitVisible(css("#seat-"+inA.String()+`[data-mine="true"]`))); err != nil {
		t.Fatalf("A holds in A: %v", err)
	}
	if err := chromedp.Do(ctxB, chromedp.WaitVisible(css("#seat-"+inA.String()+`[data-status="held"]:not([data-mine])`)), freeIs("A", 2499, 2500)); err != nil {
		diagnose(t, ctxB, "large-held")
		t.Fatalf("B sees A's hold: %v", err)
	}
	liveCounts(t, ctxA, a, tn, ev.ID, inC, 2500)
}
