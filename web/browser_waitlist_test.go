//go:build !fuzzing

package web

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestBrowserWaitlist: on a sold-out map a buyer joins the waitlist for
// one seat in section A behind another buyer and sees their place in
// line, #2; when the one ahead leaves, the place moves to #1 without a
// reload or a poll (pushed on the live socket); when the seat frees up it
// appears in their cart, live, marked as an offer from the waitlist.
// Screenshot: testoutput/browser/waitlist.png.
func TestBrowserWaitlist(t *testing.T) {
	newTab, a, srv := browserApp(t)
	tn := testenv.NewTenant(t, a, 3)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 4)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	// Sold out: two other buyers hold every seat.
	var held []store.Hold
	held = append(held, coreHold(t, a, tn.Buyers[0], ev.ID, seats[:4]...)...)
	held = append(held, coreHold(t, a, tn.Buyers[2], ev.ID, seats[4:]...)...)
	ahead, err := a.Waitlist.Join(context.Background(), actor(tn.Buyers[0]), ev.ID, hold.WaitFor{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(newTab(), 120*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, append(signIn(srv.URL, tn.Org.Slug, tn.Buyers[1].Email),
		chromedp.Navigate(srv.URL+"/e/"+ev.ID.String()),
		chromedp.WaitVisible(css(`[data-testid=waitlist-form]`)),
		setField(`[data-testid=waitlist-form] [name=count]`, "1"),
		setField(`[data-testid=waitlist-form] [name=section]`, "A"),
		chromedp.Click(css(`[data-testid=waitlist-form] button[type=submit]`)),
		waitText(`[data-testid=waitlist-position]`, "#2"),
		chromedp.WaitVisible(css(`body[data-live=connected]`)),
	)...); err != nil {
		diagnose(t, ctx, "waitlist-join")
		t.Fatalf("join the waitlist: %v", err)
	}
	if err := a.Waitlist.Leave(context.Background(), actor(tn.Buyers[0]), ahead.ID); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, waitText(`[data-testid=waitlist-position]`, "#1")); err != nil {
		diagnose(t, ctx, "waitlist-place")
		t.Fatalf("the place in line after the one ahead left: %v", err)
	}
	if _, err := a.Holds.Release(context.Background(), actor(tn.Buyers[2]), held[5].ID, ""); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(css(`#cart-`+held[5].SeatID.String()+` [data-testid=offer-note]`)),
		chromedp.WaitVisible(css(`[data-testid=waitlist-entry][data-status=offered]`)),
		// The whole cart follows: checkout is offered for the seat.
		chromedp.WaitVisible(css(`#cart button[hx-post$="/checkout"]`)),
	); err != nil {
		diagnose(t, ctx, "waitlist-offer")
		t.Fatalf("offer in the cart: %v", err)
	}
	screenshot(t, ctx, "waitlist.png")
}
