//go:build !fuzzing

package web

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestBrowserGA: two buyers have the map of an event with a standing
// section open; one holds 3 places with the panel's form; both panels say
// 97 places left, and the holder's cart lists the places. The holder's
// cart also follows holds made elsewhere (another tab, the API): a seat
// held so arrives with its price, the total and checkout appear, and the
// total falls back when that hold is released — each time the very total
// the server renders for the cart; after checkout, such a line brings
// checkout back rather than leave a pay button for fewer seats. Screenshot: testoutput/browser/ga.png
// (the holder's map).
func TestBrowserGA(t *testing.T) {
	newTab, a, srv := browserApp(t)
	tn := testenv.NewTenant(t, a, 2)
	ev := gaChartEvent(t, a, tn)
	mapURL := srv.URL + "/e/" + ev.String()

	watcher, cancelW := context.WithTimeout(newTab(), 120*time.Second)
	defer cancelW()
	holder, cancelH := context.WithTimeout(newTab(), 120*time.Second)
	defer cancelH()
	for i, ctx := range []context.Context{watcher, holder} {
		if err := chromedp.Do(ctx, append(signIn(srv.URL, tn.Org.Slug, tn.Buyers[i].Email),
			chromedp.Navigate(mapURL),
			waitText(`[data-testid=ga-panel]`, "100"),
			chromedp.WaitVisible(css(`body[data-live=connected]`)),
			chromedp.WaitVisible(css(`[data-cart-empty]`)),
		)...); err != nil {
			diagnose(t, ctx, "open map")
			t.Fatalf("buyer %d: open the map: %v", i, err)
		}
	}

	// A seat held in another tab: its line, the total and checkout appear
	// in this one with no request.
	var seat uuid.UUID
	if err := a.Pool.QueryRow(context.Background(), `
		SELECT s.id FROM seats s JOIN sections c ON c.id = s.section_id
		WHERE s.event_id = $1 AND c.kind <> 'ga' AND s.category IS NOT NULL ORDER BY s.idx LIMIT 1`, ev).Scan(&seat); err != nil {
		t.Fatal(err)
	}
	seated := coreHold(t, a, tn.Buyers[1], ev, seat)[0]
	want := cartTotal(t, a, tn.Buyers[1], ev)
	if err := chromedp.Do(holder,
		chromedp.WaitVisible(css(`#cart-`+seat.String()+` [data-testid=cart-price]`)),
		chromedp.WaitVisible(css(`#cart button[hx-post$="/checkout"]`)),
		chromedp.WaitNotVisible(css(`[data-cart-empty]`)),
		waitTotal(want),
	); err != nil {
		diagnose(t, holder, "live cart line")
		t.Fatalf("a seat held in another tab, total %q: %v", want, err)
	}

	if err := chromedp.Do(holder,
		setField(`#ga-count-G`, "3"),
		chromedp.Click(css(`[data-testid=ga-G] button[type=submit]`)),
		waitText(`#cart-items`, "G place"),
		waitText(`[data-testid=ga-panel]`, "97"),
	); err != nil {
		diagnose(t, holder, "hold places")
		t.Fatalf("hold 3 places: %v", err)
	}
	if err := chromedp.Do(watcher, waitText(`[data-testid=ga-panel]`, "97")); err != nil {
		diagnose(t, watcher, "watch")
		t.Fatalf("the other map did not change: %v", err)
	}

	// Released elsewhere: the line goes and the total falls to the places'.
	if _, err := a.Holds.Release(context.Background(), actor(tn.Buyers[1]), seated.ID, ""); err != nil {
		t.Fatal(err)
	}
	want = cartTotal(t, a, tn.Buyers[1], ev)
	if err := chromedp.Do(holder,
		chromedp.WaitNotPresent(css(`#cart-`+seat.String())),
		waitTotal(want),
	); err != nil {
		diagnose(t, holder, "live cart release")
		t.Fatalf("the seat released elsewhere, total %q: %v", want, err)
	}
	screenshot(t, holder, "ga.png")

	// After checkout the cart pays for what it listed; a line arriving
	// live brings checkout back, with the new line in it.
	if err := chromedp.Do(holder,
		chromedp.Click(css(`#cart button[hx-post$="/checkout"]`)),
		chromedp.WaitVisible(css(`#cart form[data-cart-pay]`)),
	); err != nil {
		diagnose(t, holder, "checkout")
		t.Fatalf("checkout: %v", err)
	}
	coreHold(t, a, tn.Buyers[1], ev, seat)
	want = cartTotal(t, a, tn.Buyers[1], ev)
	for i, step := range []chromedp.Action[chromedp.Void]{
		chromedp.WaitNotPresent(css(`#cart form[data-cart-pay]`)),
		chromedp.WaitVisible(css(`#cart button[hx-post$="/checkout"]`)),
		chromedp.WaitVisible(css(`#cart-` + seat.String())),
		waitTotal(want),
	} {
		sctx, c := context.WithTimeout(holder, 10*time.Second)
		err := chromedp.Do(sctx, step)
		c()
		if err != nil {
			h, _ := chromedp.Run(holder, chromedp.OuterHTML(css(`#cart`)))
			t.Fatalf("a seat held elsewhere after checkout: step %d: %v: %s", i, err, h)
		}
	}
}

// waitTotal waits until the cart's total reads exactly want.
func waitTotal(want string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`((document.querySelector("[data-testid=cart-total]") || {}).textContent || "") === %q`, want),
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second))
}

// cartTotal is the total the server renders in u's cart for event ev.
func cartTotal(t *testing.T, a *app.App, u store.User, ev uuid.UUID) string {
	t.Helper()
	c, err := New(depsOf(a)).pages.Cart.View(context.Background(), actor(u), ev)
	if err != nil {
		t.Fatal(err)
	}
	if c.Total == "" {
		t.Fatal("the cart has no total")
	}
	return c.Total
}
