//go:build !fuzzing

package web

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/web/staff"
)

// TestBrowserEventFromChart: an organizer builds a chart in the chart
// editor, makes an event from it in the pages with times in the venue's
// zone and a price, and publishes it; the buyer's map says it is not on
// sale until it is published, then shows the price, the cart a total, and
// the booking what was paid.
func TestBrowserEventFromChart(t *testing.T) {
	newTab, a, srv := browserApp(t)
	tn := testenv.NewTenant(t, a, 1)

	org, cancelOrg := context.WithTimeout(newTab(), 240*time.Second)
	defer cancelOrg()
	// The chart: one category "front", two rows of ten.
	if err := chromedp.Do(org, append(signIn(srv.URL, tn.Org.Slug, tn.Organizer.Email),
		chromedp.Navigate(srv.URL+"/admin/charts"),
		chromedp.WaitVisible(css(`[data-testid=new-chart]`)),
		chromedp.Click(css(`[data-testid=new-chart]`)),
		chromedp.WaitVisible(css(`#ce-section-form`)),
		setField(`#ce-categories [data-testid=category] input[type=text]`, "front"),
		setField(`#ce-categories [data-testid=category] input[type=text]:nth-of-type(2)`, "Front"),
		setField(`#ce-section-form [name=rows]`, "2"),
		setField(`#ce-section-form [name=seats]`, "10"),
		setField(`#ce-section-form [name=category]`, "front"),
		setField(`#ce-section-form [name=name]`, "Stalls"),
		chromedp.Click(css(`#ce-section-form button[type=submit]`)),
		waitText(`#ce-sections`, "2 rows, 20 seats"),
		chromedp.SendKeys(css(`#ce-name`), "Browser Hall"),
		chromedp.Click(css(`#ce-save`)),
		waitText(`[data-testid=chart-status]`, "Saved version 1"),
	)...); err != nil {
		diagnose(t, org, "chart")
		t.Fatalf("build the chart: %v", err)
	}
	charts, err := a.Store.Charts.List(context.Background(), tn.Org.ID)
	if err != nil || len(charts) != 1 {
		t.Fatalf("charts %v (%v)", charts, err)
	}
	v := charts[0]
	buyer, cancelBuyer := context.WithTimeout(newTab(), 240*time.Second)
	defer cancelBuyer()

	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	local := func(d time.Duration) string { return time.Now().Add(d).In(loc).Format(staff.FormTime) }
	// Typed once: read back later, it must be the very value typed, even
	// when a minute has turned meanwhile.
	startsTyped := local(72 * time.Hour)
	steps := append([]chromedp.Action[chromedp.Void]{},
		chromedp.Navigate(srv.URL+"/admin/events"),
		chromedp.Click(css(`a[href="/admin/events/new"]`)),
		chromedp.WaitVisible(css(`select[name=chart]`)),
		chromedp.SetValue(css(`select[name=chart]`), v.ChartID.String()),
		chromedp.Submit(css(`select[name=chart]`)),
		chromedp.WaitVisible(css(`input[name=price_front]`)),
		chromedp.SetValue(css(`input[name=name]`), "Browser Night"),
		chromedp.SetValue(css(`input[name=venue]`), "Test Hall"),
		chromedp.SetValue(css(`input[name=time_zone]`), "America/New_York"),
		chromedp.SetValue(css(`input[name=starts_at]`), startsTyped),
		chromedp.SetValue(css(`input[name=on_sale_at]`), local(-time.Hour)),
		chromedp.SetValue(css(`input[name=sales_end_at]`), local(48*time.Hour)),
		chromedp.SetValue(css(`input[name=price_front]`), "4550"),
		chromedp.SetValue(css(`input[name=currency_front]`), "USD"),
		chromedp.SetValue(css(`input[name=hold_ttl]`), "300"),
		chromedp.Submit(css(`input[name=name]`)),
		chromedp.WaitVisible(css(`[data-testid=status]`)),
	)
	if err := chromedp.Do(org, steps...); err != nil {
		diagnose(t, org, "create-event")
		t.Fatalf("create the event: %v", err)
	}
	path, err := chromedp.Run(org, chromedp.Evaluate[string](`location.pathname`))
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(path, "/admin/events/"), "/edit")
	status, err := chromedp.Run(org, chromedp.Text(css(`[data-testid=status]`)))
	if err != nil || status != "draft" {
		t.Fatalf("status after create %q (%v)", status, err)
	}
	screenshot(t, org, "event-edit-draft.png")
	// The times are shown back in the venue's zone, as typed.
	startsShown, err := chromedp.Run(org, chromedp.Value(css(`input[name=starts_at]`)))
	if err != nil || startsShown != startsTyped {
		t.Errorf("starts_at shown as %q, typed %q (%v)", startsShown, startsTyped, err)
	}

	// A draft is not public: the buyer's link to its map is not found.
	mapURL := srv.URL + "/e/" + id
	if err := chromedp.Do(buyer, append(signIn(srv.URL, tn.Org.Slug, tn.Buyers[0].Email),
		chromedp.Navigate(mapURL), waitText(`[data-testid=error-status]`, "404"))...); err != nil {
		diagnose(t, buyer, "draft-map")
		t.Fatalf("buyer on the draft: %v", err)
	}

	// The click leads to the events list (WaitVisible follows the
	// navigation); the row's status is then read in the page in one step,
	// since a node found by one command may be gone by the next while the
	// new page settles.
	row := `tr[data-event="` + id + `"] [data-testid=status]`
	listed := fmt.Sprintf(`((document.querySelector(%q) || {}).textContent || "").trim() === "on sale"`, row)
	if err := chromedp.Do(org, chromedp.Click(css(`form[action$="/status"] button`)), chromedp.WaitVisible(css(row)), poll(listed)); err != nil {
		diagnose(t, org, "publish")
		t.Fatalf("publish: the events list never showed the event on sale: %v", err)
	}
	screenshot(t, org, "events-list.png")

	seat := `#venue .seat.cat-1[data-status="available"]`
	if err := chromedp.Do(buyer, chromedp.Navigate(mapURL), chromedp.WaitVisible(css(`body[data-live=connected]`)),
		chromedp.WaitVisible(css(`[data-category=front] [data-testid=price]`))); err != nil {
		diagnose(t, buyer, "open-map")
		t.Fatalf("open map: %v", err)
	}
	price, err := chromedp.Run(buyer, chromedp.Text(css(`[data-category=front] [data-testid=price]`)))
	if err != nil || price != "45.50 USD" {
		t.Fatalf("legend price %q (%v)", price, err)
	}
	// The map is fetched again once the socket opens (resync): a click
	// that lands on the seat being replaced is lost, so click until the
	// hold exists (a click on a held seat of one's own would release it).
	held := func() bool {
		var n int
		err := a.Pool.QueryRow(context.Background(), `SELECT count(*) FROM seat_holds WHERE event_id = $1::uuid AND status = 'active'`, id).Scan(&n)
		return err == nil && n == 1
	}
	clicks := 0
	for ; !held(); clicks++ {
		if clicks == 5 {
			diagnose(t, buyer, "hold")
			t.Fatal("no hold after 5 clicks")
		}
		if err := click(buyer, seat); err != nil {
			t.Fatalf("click a front seat: %v", err)
		}
		testsvc.Poll(3*time.Second, held)
	}
	wctx, cancelWait := context.WithTimeout(buyer, 30*time.Second)
	t.Logf("held after %d click(s)", clicks)
	defer cancelWait()
	if err := chromedp.Do(wctx, chromedp.WaitVisible(css(`[data-testid=cart-total]`))); err != nil {
		cart, _ := chromedp.Run(buyer, chromedp.OuterHTML(css(`#cart`)))
		diagnose(t, buyer, "hold")
		t.Fatalf("hold: %v; the cart: %s", err, cart)
	}
	total, err := chromedp.Run(buyer, chromedp.Text(css(`[data-testid=cart-total]`)))
	if err != nil || total != "45.50 USD" {
		t.Fatalf("cart total %q (%v)", total, err)
	}
	screenshot(t, buyer, "seatmap-prices.png")
	if err := chromedp.Do(buyer,
		chromedp.Click(css(`#cart button[hx-post$="/checkout"]`)),
		chromedp.WaitVisible(css(`#cart form button[type=submit]`)),
		chromedp.Click(css(`#cart form button[type=submit]`)),
		chromedp.WaitVisible(css(`[data-testid=paid]`)),
	); err != nil {
		diagnose(t, buyer, "pay")
		t.Fatalf("pay: %v", err)
	}
	paid, err := chromedp.Run(buyer, chromedp.Text(css(`[data-testid=paid]`)))
	if err != nil || paid != "45.50 USD" {
		t.Fatalf("booking shows paid %q (%v)", paid, err)
	}
	var hold struct{ ttl float64 }
	if err := a.Pool.QueryRow(context.Background(), `
		SELECT extract(epoch FROM held_until - created_at) FROM seat_holds WHERE event_id = $1::uuid ORDER BY created_at LIMIT 1`, id).
		Scan(&hold.ttl); err != nil {
		t.Fatal(err)
	}
	if hold.ttl < 290 || hold.ttl > 310+300 { // 300 s, plus one checkout extension
		t.Errorf("hold TTL %v s, want the event's 300 s (plus the checkout extension)", hold.ttl)
	}
}
