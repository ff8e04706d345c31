//go:build !fuzzing

package web

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seatd/internal/hold"
	"seatd/internal/testenv"
)

// TestBrowserWaitingRoom: an event's waiting room opens in a few seconds.
// A buyer who opens the map is sent to the line and sees when it opens;
// at the opening the admitter (the app's own background job) lets them
// through, and the page, polling on its own, takes them to the map
// without a reload by the buyer, where they hold a seat.
func TestBrowserWaitingRoom(t *testing.T) {
	newTab, a, srv := browserApp(t)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 5)
	seat := "#seat-" + testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)[3].String()

	ctx, cancel := context.WithTimeout(newTab(), 90*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, signIn(srv.URL, tn.Org.Slug, tn.Buyers[0].Email)...); err != nil {
		diagnose(t, ctx, "queue-sign-in")
		t.Fatalf("sign in: %v", err)
	}
	// The line opens 4 s from now (after sign-in, so the page is open
	// before the opening), letting in 6 000 a minute.
	on, opens, rate := true, time.Now().Add(4*time.Second).UTC().Format(time.RFC3339), "6000"
	org := hold.Actor{Org: tn.Org.ID, User: tn.Organizer.ID, Role: hold.RoleOrganizer}
	if _, err := a.Events.Update(context.Background(), org, ev.ID, hold.EventInput{
		WaitingRoom: &hold.WaitingRoomInput{Enabled: &on, OpensAt: &opens, RatePerMinute: &rate}}); err != nil {
		t.Fatal(err)
	}

	mapURL := srv.URL + "/e/" + ev.ID.String()
	if err := chromedp.Do(ctx, chromedp.Navigate(mapURL), chromedp.WaitVisible(css(`[data-testid=queue]`))); err != nil {
		diagnose(t, ctx, "queue-line")
		t.Fatalf("the map did not send the buyer to the line: %v", err)
	}
	where, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`))
	if err != nil || where != "/e/"+ev.ID.String()+"/queue" {
		t.Fatalf("the buyer is at %q (%v), want the line", where, err)
	}
	visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.querySelector('[data-queue-when="before_opening"]').hidden`))
	if err != nil || !visible {
		diagnose(t, ctx, "queue-before-opening")
		t.Fatalf("before the opening the page does not say when the line opens (%v)", err)
	}

	// Admitted: the page goes to the map by itself; the buyer holds there.
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`body[data-live=connected]`)), settled()); err != nil {
		diagnose(t, ctx, "queue-admitted")
		t.Fatalf("the buyer never reached the map: %v", err)
	}
	if where, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`)); err != nil || where != "/e/"+ev.ID.String() {
		t.Fatalf("after admission the buyer is at %q (%v), want the map", where, err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(seat))); err != nil {
		if err := openSection(ctx, "A", false); err != nil {
			t.Fatalf("open section A: %v", err)
		}
	}
	if err := click(ctx, seat); err != nil {
		t.Fatalf("click a seat: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(seat+`[data-mine="true"]`))); err != nil {
		diagnose(t, ctx, "queue-hold")
		t.Fatalf("the admitted buyer's hold: %v", err)
	}
	var held int
	if err := a.Pool.QueryRow(context.Background(), `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND user_id = $2 AND status = 'active'`,
		ev.ID, tn.Buyers[0].ID).Scan(&held); err != nil || held != 1 {
		t.Fatalf("%d holds of the buyer in postgres (%v), want 1", held, err)
	}
}
