//go:build !fuzzing

package web

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"seatd/internal/testenv"
)

// pageProblems collects what a tab reports that must not happen: script
// exceptions and Content-Security-Policy violations (an inline style or
// script would be one).
type pageProblems struct {
	mu   sync.Mutex
	list []string
}

func watchProblems(t *testing.T, ctx context.Context) *pageProblems {
	t.Helper()
	p := &pageProblems{}
	err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg = "exception: " + e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
		case *log.EventEntryAdded:
			if strings.Contains(e.Entry.Text, "Content Security Policy") {
				msg = "csp: " + e.Entry.Text
			}
		}
		if msg != "" {
			p.mu.Lock()
			p.list = append(p.list, msg)
			p.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *pageProblems) check(t *testing.T, page string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.list {
		t.Errorf("%s: %s", page, m)
	}
}

// TestBrowserStaffPages: the organizer's dashboard is open; a buyer in
// another browser context holds a seat; the dashboard's held count and
// feed change without a reload. The box office sees the next hold appear
// live in its table, releases it with a reason, and the buyer's cart says
// so. Screenshots: testoutput/browser/dashboard.png, box-office.png.
func TestBrowserStaffPages(t *testing.T) {
	newTab, a, srv := browserApp(t)
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 2, 6, 12)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()

	// Some life before the pages open: holds, a sale, a blocked seat, and
	// an hour of recorded occupancy for the chart.
	coreHold(t, a, tn.Buyers[1], ev.ID, seats[20], seats[21])
	sold := coreHold(t, a, tn.Buyers[1], ev.ID, seats[30], seats[31], seats[32])
	ids := []uuid.UUID{sold[0].ID, sold[1].ID, sold[2].ID}
	if _, err := a.Holds.Purchase(ctx, actor(tn.Buyers[1]), ev.ID, uuid.NewString(), ids); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.SetBlocked(ctx, actor(tn.Organizer), ev.ID, seats[0], true, "camera"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pool.Exec(ctx, `INSERT INTO occupancy_snapshots (org_id, event_id, at, available, held, sold, blocked)
		SELECT $1, $2, now() - make_interval(mins => 5 * i), 144 - (12 - i) * 2 - (12 - i) % 3 - 1, (12 - i) % 3, (12 - i) * 2, 1
		FROM generate_series(1, 12) i`, tn.Org.ID, ev.ID); err != nil {
		t.Fatal(err)
	}

	orgTab, buyerTab, boxTab := newTab(), newTab(), newTab()
	orgCtx, cancelOrg := context.WithTimeout(orgTab, 60*time.Second)
	defer cancelOrg()
	buyerCtx, cancelBuyer := context.WithTimeout(buyerTab, 60*time.Second)
	defer cancelBuyer()
	boxCtx, cancelBox := context.WithTimeout(boxTab, 60*time.Second)
	defer cancelBox()
	orgProblems, boxProblems := watchProblems(t, orgCtx), watchProblems(t, boxCtx)

	dash := srv.URL + "/admin/events/" + ev.ID.String()
	steps := append(signIn(srv.URL, tn.Org.Slug, tn.Organizer.Email), chromedp.Navigate(dash),
		chromedp.WaitVisible(css(`#occupancy`)), chromedp.WaitVisible(css(`body[data-live=connected]`)))
	if err := chromedp.Do(orgCtx, steps...); err != nil {
		t.Fatalf("open dashboard: %v", err)
	}
	// The panels reload once the socket opens; wait for the settled text.
	if err := chromedp.Do(orgCtx, textIs(`#occupancy [data-testid=count-held]`, "2")); err != nil {
		t.Fatalf("dashboard does not show 2 held: %v", err)
	}
	// A reload would lose this.
	if _, err := chromedp.Run(orgCtx, chromedp.Evaluate[bool](`window.seatdNoReload = true`)); err != nil {
		t.Fatal(err)
	}

	seat := seats[73] // section B, row A, seat 2
	mapURL := srv.URL + "/e/" + ev.ID.String() + "?section=B"
	steps = append(signIn(srv.URL, tn.Org.Slug, tn.Buyers[0].Email), chromedp.Navigate(mapURL),
		chromedp.WaitVisible(css(`#seat-`+seat.String())), chromedp.WaitVisible(css(`body[data-live=connected]`)))
	if err := chromedp.Do(buyerCtx, steps...); err != nil {
		t.Fatalf("open seat map: %v", err)
	}
	clicked := time.Now()
	if err := click(buyerCtx, `#seat-`+seat.String()); err != nil {
		t.Fatalf("buyer clicks: %v", err)
	}
	if err := chromedp.Do(buyerCtx, chromedp.WaitVisible(css(`#seat-`+seat.String()+`[data-mine="true"]`))); err != nil {
		t.Fatalf("buyer holds: %v", err)
	}
	if err := chromedp.Do(orgCtx, chromedp.WaitVisible(css(`#feed li[data-kind=held][data-seat="B-A-2"]`))); err != nil {
		t.Fatalf("dashboard feed: %v", err)
	}
	if err := chromedp.Do(orgCtx, textIs(`#occupancy [data-testid=count-held]`, "3")); err != nil {
		t.Fatalf("dashboard does not show 3 held after the click: %v", err)
	}
	took := time.Since(clicked)
	same, err := chromedp.Run(orgCtx, chromedp.Evaluate[bool](`window.seatdNoReload === true`))
	if err != nil || !same {
		t.Fatalf("the dashboard reloaded (%v)", err)
	}
	pct, _ := chromedp.Run(orgCtx, chromedp.Text(css(`#occupancy [data-testid=pct-held]`)))
	forecast, _ := chromedp.Run(orgCtx, chromedp.Text(css(`[data-testid=forecast]`)))
	verified, _ := chromedp.Run(orgCtx, chromedp.Text(css(`#verify`)))
	t.Logf("click in the buyer's tab to the dashboard's feed and counts: %v; held 3 (%s); forecast %q; %q",
		took.Round(time.Millisecond), pct, forecast, strings.Join(strings.Fields(verified), " "))
	screenshot(t, orgCtx, "dashboard.png")
	orgProblems.check(t, "dashboard")

	// The box office: the hold is listed; the next one appears live.
	box := srv.URL + "/box-office/events/" + ev.ID.String() + "?map=B"
	steps = append(signIn(srv.URL, tn.Org.Slug, tn.BoxOffice.Email), chromedp.Navigate(box),
		chromedp.WaitVisible(css(`#hold-`+seat.String())), chromedp.WaitVisible(css(`body[data-live=connected]`)))
	if err := chromedp.Do(boxCtx, steps...); err != nil {
		t.Fatalf("open box office: %v", err)
	}
	seat2 := seats[75] // B-A-4
	if err := click(buyerCtx, `#seat-`+seat2.String()); err != nil {
		t.Fatalf("buyer clicks again: %v", err)
	}
	if err := chromedp.Do(buyerCtx, chromedp.WaitVisible(css(`#seat-`+seat2.String()+`[data-mine="true"]`))); err != nil {
		t.Fatalf("buyer holds again: %v", err)
	}
	row := `#hold-` + seat2.String()
	if err := chromedp.Do(boxCtx, chromedp.WaitVisible(css(row)),
		chromedp.WaitVisible(css(`#bo-seat-`+seat2.String()+`[data-status=held]`))); err != nil {
		t.Fatalf("row appears live: %v", err)
	}
	// The countdowns tick in the browser.
	if err := chromedp.Do(boxCtx, chromedp.Poll[chromedp.Void](`/^\d+:\d\d$/.test((document.querySelector('`+row+` [data-until]') || {}).textContent)`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("countdown does not tick: %v", err)
	}
	screenshot(t, boxCtx, "box-office.png")

	// Release it with a reason; the buyer's cart says why it went.
	if err := chromedp.Do(boxCtx,
		chromedp.Click(css(row+` input[name=hold_id]`)),
		chromedp.SendKeys(css(`#release-form input[name=reason]`), "customer asked at the desk"),
		chromedp.Click(css(`#release-form button[type=submit]`)),
		chromedp.WaitVisible(css(`main > p[role=status]`)),
		chromedp.WaitNotPresent(css(row)),
	); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := chromedp.Do(boxCtx, textIs(`main > p[role=status]`, "Released 1 hold (B-A-4).")); err != nil {
		t.Errorf("flash: %v", err)
	}
	if err := chromedp.Do(buyerCtx, chromedp.WaitVisible(css(`[data-testid=cart-notice]`)),
		chromedp.WaitVisible(css(`#seat-`+seat2.String()+`[data-status=available]`)),
		chromedp.WaitNotPresent(css(`#cart-`+seat2.String()))); err != nil {
		t.Fatalf("buyer sees the release: %v", err)
	}
	if err := chromedp.Do(buyerCtx, textIs(`[data-testid=cart-notice]`, "Your hold on seat B-A-4 was released by the box office.")); err != nil {
		t.Errorf("notice: %v", err)
	}
	screenshot(t, buyerCtx, "seatmap-buyer-released-by-box-office.png")
	boxProblems.check(t, "box office")
}

// click clicks the element sel names. The map and panels are swapped in
// whole when the live socket (re)opens, so the node found may be replaced
// before the click lands ("Could not find node"): then find it again.
func click(ctx context.Context, sel string) error {
	var err error
	for range 5 {
		if err = chromedp.Do(ctx, chromedp.Click(css(sel))); err == nil || !strings.Contains(err.Error(), "Could not find node") {
			return err
		}
		time.Sleep(100 * time.Millisecond) // let the swap that replaced the node finish
	}
	return err
}

// textIs waits until the element's text is want: live swaps may replace
// the element meanwhile, so a single read could see it mid-swap.
func textIs(sel, want string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent === %q`, sel, want),
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second))
}
