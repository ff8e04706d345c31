//go:build !fuzzing

package web

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"seatd/internal/testenv"
)

// TestBrowserDashboardDoorLive: the organizer's dashboard is open; door
// staff admit tickets through the API, at two entrances; the dashboard's
// door figures (admitted of valid, per entrance) follow over its socket,
// without a reload.
func TestBrowserDashboardDoorLive(t *testing.T) {
	newTab := browser(t)
	a := testenv.App(t, generousLimits)
	testenv.Background(t, a)
	s := serveApp(t, a, options{})
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	hs := coreHold(t, a, tn.Buyers[0], ev.ID, seats[:3]...)
	b, err := a.Holds.Purchase(context.Background(), actor(tn.Buyers[0]), ev.ID, uuid.NewString(), []uuid.UUID{hs[0].ID, hs[1].ID, hs[2].ID})
	if err != nil {
		t.Fatal(err)
	}
	codes := make([]string, len(b.Tickets))
	for i := range b.Tickets {
		if codes[i], err = a.TicketKeys.Code(context.Background(), ticketClaims(b, i)); err != nil {
			t.Fatal(err)
		}
	}
	doorUser, err := a.Accounts.Create(context.Background(), tn.Org.ID, "door@"+tn.Org.Slug+".example", testenv.Password, "door")
	if err != nil {
		t.Fatal(err)
	}
	scanner := s.as(tn.Org, doorUser)
	checkin := func(i int, entrance string) {
		t.Helper()
		scanner.do("POST", "/api/v1/events/"+ev.ID.String()+"/checkins",
			map[string]string{"code": codes[i], "entrance": entrance}).want(t, 201)
	}

	ctx, cancel := context.WithTimeout(newTab(), 90*time.Second)
	defer cancel()
	steps := append(signIn(s.ts.URL, tn.Org.Slug, tn.Organizer.Email),
		chromedp.Navigate(s.ts.URL+"/admin/events/"+ev.ID.String()),
		chromedp.WaitVisible(css(`body[data-live=connected]`)), settled(),
		textIs(`[data-testid=door-admitted]`, "0"), textIs(`[data-testid=door-expected]`, "3"),
		// A mark on the page: a reload would lose it.
		chromedp.Evaluate[chromedp.Void](`window.__notReloaded = true`))
	if err := chromedp.Do(ctx, steps...); err != nil {
		diagnose(t, ctx, "dashboard-door-open")
		t.Fatalf("open the dashboard: %v", err)
	}
	checkin(0, "North")
	if err := chromedp.Do(ctx, textIs(`[data-testid=door-admitted]`, "1"),
		textIs(`#door-figures [data-entrance=North] [data-testid=entrance-admitted]`, "1")); err != nil {
		diagnose(t, ctx, "dashboard-door-first")
		t.Fatalf("the first admission did not reach the dashboard: %v", err)
	}
	checkin(1, "South")
	checkin(2, "North")
	if err := chromedp.Do(ctx, textIs(`[data-testid=door-admitted]`, "3"),
		textIs(`#door-figures [data-entrance=North] [data-testid=entrance-admitted]`, "2"),
		textIs(`#door-figures [data-entrance=South] [data-testid=entrance-admitted]`, "1")); err != nil {
		diagnose(t, ctx, "dashboard-door-more")
		t.Fatalf("the next admissions did not reach the dashboard: %v", err)
	}
	kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded === true`))
	if err != nil || !kept {
		t.Fatalf("the dashboard was reloaded (%v)", err)
	}
	screenshot(t, ctx, "dashboard-door.png")
}
