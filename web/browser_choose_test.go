//go:build !fuzzing

package web

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestBrowserChooseSeats: on a strict event whose accessible seats are
// held back for a few seconds, the buyer's map names the wheelchair space
// for screen readers and shows it held back, its overview counts the
// held-back seats free only while the buyer asks for accessible seating,
// the "best seats" control holds 3 seats side by side (once, when it is
// submitted twice at once), and when the
// release time comes the open map lifts the hold-back, and counts them,
// without a reload.
func TestBrowserChooseSeats(t *testing.T) {
	newTab, a, srv := browserApp(t)
	tn := testenv.NewTenant(t, a, 1)
	ctx := context.Background()
	v := testenv.NewChart(t, a, tn.Org.ID, 4, 10)
	str := func(s string) *string { return &s }

	// Signed in before the event exists, so the release time is counted
	// from the steps that must happen before it, not from Chromium's start.
	buyer, cancel := context.WithTimeout(newTab(), 120*time.Second)
	defer cancel()
	if err := chromedp.Do(buyer, signIn(srv.URL, tn.Org.Slug, tn.Buyers[0].Email)...); err != nil {
		diagnose(t, buyer, "choose-sign-in")
		t.Fatalf("sign in: %v", err)
	}
	now := time.Now()
	release := now.Add(15 * time.Second).Truncate(time.Second)
	org := hold.Actor{Org: tn.Org.ID, User: tn.Organizer.ID, Role: hold.RoleOrganizer}
	e, err := a.Events.Create(ctx, org, hold.EventInput{Name: str("Choose Night"), Venue: str("Hall"),
		StartsAt: str(now.Add(48 * time.Hour).UTC().Format(time.RFC3339)), TimeZone: str("UTC"), ChartID: str(v.ChartID.String()),
		OnSaleAt: str(now.Add(-time.Hour).UTC().Format(time.RFC3339)), SalesEndAt: str(now.Add(24 * time.Hour).UTC().Format(time.RFC3339)),
		OrphanRule: str("strict"), AccessibleReleaseAt: str(release.UTC().Format(time.RFC3339)),
		Prices: []store.Price{{Category: "front", PriceMinor: 5000, Currency: "EUR"}, {Category: "back", PriceMinor: 2500, Currency: "EUR"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Events.Update(ctx, org, e.ID, hold.EventInput{Status: str("on_sale")}); err != nil {
		t.Fatal(err)
	}

	if err := chromedp.Do(buyer,
		chromedp.Navigate(srv.URL+"/e/"+e.ID.String()), chromedp.WaitVisible(css(`body[data-live=connected]`)),
		chromedp.WaitVisible(css(`[data-testid=orphan-rule]`)),
		chromedp.WaitVisible(css(`body.accessible-held-back`))); err != nil {
		diagnose(t, buyer, "choose-map")
		t.Fatalf("open the map: %v", err)
	}
	label, err := chromedp.Run(buyer, chromedp.AttributeValue(css(`.seat[data-flag=accessible]`), "aria-label"))
	if err != nil || !strings.Contains(label.Value, "wheelchair space") {
		t.Errorf("accessible seat's name %q (%v)", label.Value, err)
	}
	// The overview counts the held-back seats free only for a buyer who
	// asks for accessible seating (and, below, for everyone once released).
	free := func(flagged bool) string {
		var n int
		if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM seats s JOIN sections c ON c.id = s.section_id
			WHERE s.event_id = $1 AND c.label = 'S' AND s.status = 'available' AND ($2 OR NOT (s.accessible OR s.companion))`,
			e.ID, flagged).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return strconv.Itoa(n)
	}
	box := `#venue a[data-section-key=S]`
	for _, step := range []struct {
		tick bool
		want string
	}{{false, free(false)}, {true, free(true)}, {false, free(false)}} {
		if err := chromedp.Do(buyer,
			chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(function () {
				var c = document.querySelector("#choose input[name=accessible]");
				if (c.checked !== %t) c.click();
			})()`, step.tick)),
			chromedp.Poll[chromedp.Void](fmt.Sprintf(`(document.querySelector(%q) || {getAttribute: function () {}}).getAttribute("data-available") === %q`, box, step.want),
				chromedp.WithPollingTimeout(5*time.Second))); err != nil {
			got, _ := chromedp.Run(buyer, chromedp.AttributeValue(css(box), "data-available"))
			t.Fatalf("accessible seating asked %v: section S counts %q free, want %s (%v)", step.tick, got.Value, step.want, err)
		}
	}
	held := func() int {
		var n int
		if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND status = 'active'`, e.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Submitted twice at once, as by a double click: one request goes,
	// with its key, and 3 seats are held, not 6.
	if err := chromedp.Do(buyer, chromedp.SetValue(css(`[data-testid=best-count]`), "3"),
		chromedp.Evaluate[chromedp.Void](`(function () {
			window.__keys = [];
			document.addEventListener("htmx:configRequest", function (e) {
				if (e.detail.elt.matches("form[data-keyed]")) window.__keys.push(e.detail.parameters.key);
			});
			var f = document.querySelector("[data-testid=best-submit]").form;
			htmx.trigger(f, "submit");
			htmx.trigger(f, "submit");
		})()`),
		waitText(`#cart [role=alert]`, "Held the best 3 seats")); err != nil {
		diagnose(t, buyer, "best")
		t.Fatalf("best seats: %v", err)
	}
	keys, err := chromedp.Run(buyer, chromedp.Evaluate[[]string](`window.__keys`))
	if err != nil || len(keys) != 1 || len(keys[0]) != 32 {
		t.Fatalf("the two submits sent requests with keys %q (%v), want one request with a key", keys, err)
	}
	if n := held(); n != 3 {
		t.Fatalf("%d holds after best 3 sent twice", n)
	}
	testsvc.Eventually(t, 10*time.Second, "3 seats of mine on the map", func() bool {
		n, err := chromedp.Run(buyer, chromedp.Evaluate[int](`document.querySelectorAll('#venue .seat[data-mine=true]').length`))
		return err == nil && n == 3
	})
	screenshot(t, buyer, "choose-seats.png")
	// The release time comes: the open map lifts the hold-back by itself.
	if err := chromedp.Do(buyer, chromedp.WaitNotPresent(css(`body.accessible-held-back`))); err != nil {
		diagnose(t, buyer, "release")
		t.Fatalf("the map never released the accessible seats: %v", err)
	}
	if time.Now().Before(release) {
		t.Errorf("released on the map before the release time")
	}
	want := free(true)
	if err := chromedp.Do(buyer, chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).getAttribute("data-available") === %q`, box, want),
		chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		got, _ := chromedp.Run(buyer, chromedp.AttributeValue(css(box), "data-available"))
		t.Fatalf("released: section S counts %q free, want %s (%v)", got.Value, want, err)
	}
}
