//go:build !fuzzing

package web

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seatd/internal/testenv"
)

// TestBrowserPayWithTestProvider: a buyer holds a seat on the map, checks
// out and pays on the test provider's card page. The declined card brings
// them back to the map with the reason and the seat still theirs, shown
// as being paid; the good card leads, through the provider's webhook, to
// the booking page.
func TestBrowserPayWithTestProvider(t *testing.T) {
	newTab := browser(t)
	s := payServerWith(t, nil, true)
	tn := testenv.NewTenant(t, s.app, 1)
	event, seats := paidEvent(t, s.app, tn)
	seatSel := "#seat-" + seats["B3"].String()
	ctx, cancel := context.WithTimeout(newTab(), 120*time.Second)
	defer cancel()
	base := s.ts.URL
	if err := chromedp.Do(ctx, append(signIn(base, tn.Org.Slug, tn.Buyers[0].Email),
		chromedp.Navigate(base+"/e/"+event.String()), chromedp.WaitVisible(css(`body[data-live=connected]`)), settled())...); err != nil {
		diagnose(t, ctx, "pay-open-map")
		t.Fatalf("open the map: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(seatSel))); err != nil {
		if err := openSection(ctx, "S", false); err != nil {
			diagnose(t, ctx, "pay-open-section")
			t.Fatalf("open section S: %v", err)
		}
	}
	if err := click(ctx, seatSel); err != nil {
		t.Fatalf("click the seat: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(seatSel+`[data-mine="true"]`)), settled()); err != nil {
		t.Fatalf("the seat held: %v", err)
	}
	// One checkout shows Pay, and Pay stays: the checkout's extension
	// comes back over the live socket too, and the cart fetched again
	// (here forced once more) renders the same checked-out holds.
	if err := chromedp.Do(ctx, chromedp.Click(css(`#cart button[hx-post$="/checkout"]`)),
		chromedp.WaitVisible(css(`#cart form[data-cart-pay] button[type=submit]`)), settled(),
		chromedp.Evaluate[chromedp.Void](`htmx.trigger(document.getElementById("cart"), "resync")`), settled(),
		chromedp.WaitVisible(css(`#cart form[data-cart-pay] button[type=submit]`)),
		chromedp.Click(css(`#cart form[data-cart-pay] button[type=submit]`)),
		chromedp.WaitVisible(css(`[data-testid=test-payments]`))); err != nil {
		diagnose(t, ctx, "pay-checkout")
		t.Fatalf("check out to the card page: %v", err)
	}
	screenshot(t, ctx, "pay-card-page.png")

	expiry := "12/" + strconv.Itoa((time.Now().Year()+2)%100)
	card := func(number string) []chromedp.Action[chromedp.Void] {
		return []chromedp.Action[chromedp.Void]{
			chromedp.WaitVisible(css(`#card-number`)),
			chromedp.SendKeys(css(`#card-number`), number),
			chromedp.SendKeys(css(`#card-expiry`), expiry),
			chromedp.SendKeys(css(`#card-cvc`), "123"),
			chromedp.Submit(css(`#card-number`)),
		}
	}
	// Declined: back on the map, told why, the seat still held and paying.
	if err := chromedp.Do(ctx, append(card("4000 0000 0000 0002"),
		chromedp.WaitVisible(css(`body[data-live=connected]`)),
		chromedp.WaitVisible(css(`[data-testid=cart-paying-seat]`)),
		poll(`document.querySelector("main [role=status]") && document.querySelector("main [role=status]").textContent.includes("declined")`))...); err != nil {
		diagnose(t, ctx, "pay-declined")
		t.Fatalf("declined card: %v", err)
	}
	screenshot(t, ctx, "pay-declined.png")

	// Paid: the waiting page gives way to the booking once the webhook
	// booked it.
	if err := chromedp.Do(ctx, append([]chromedp.Action[chromedp.Void]{
		chromedp.Click(css(`[data-testid=cart-paying]`)),
		chromedp.WaitVisible(css(`[data-testid=test-payments]`))},
		append(card("4242 4242 4242 4242"), chromedp.WaitVisible(css(`[data-testid=booking-id]`)))...)...); err != nil {
		diagnose(t, ctx, "pay-paid")
		t.Fatalf("pay with the good card: %v", err)
	}
	screenshot(t, ctx, "pay-booked.png")
	if n := orgRows(t, s.app, "tickets", tn.Org.ID); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
}
