package web

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seatd/internal/testenv"
)

// TestBrowserGA: two buyers have the map of an event with a standing
// section open; one holds 3 places with the panel's form; both panels say
// 97 places left, and the holder's cart lists the places. Screenshot:
// testoutput/browser/ga.png (the holder's map).
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
		)...); err != nil {
			diagnose(t, ctx, "open map")
			t.Fatalf("buyer %d: open the map: %v", i, err)
		}
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
	screenshot(t, holder, "ga.png")
}
