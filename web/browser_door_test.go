//go:build !fuzzing

package web

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// offline takes the tab's network down (navigator.onLine false, the
// offline event) or brings it back.
func offline(down bool) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, network.OverrideNetworkState, network.OverrideNetworkStateParams{
			Offline: down, DownloadThroughput: -1, UploadThroughput: -1})
		return chromedp.Void{}, err
	}
}

// TestBrowserScanner: door staff sign in, land on the door's events, open
// the scanner of an event at an entrance and type a ticket's code as a
// USB scanner would: admitted, full screen; the same code again: already
// admitted. With the network down the next ticket is admitted by the
// event's key alone, and once the network is back the scan reaches the
// server: the ticket is admitted there, once.
// Screenshot: testoutput/browser/scanner.png.
func TestBrowserScanner(t *testing.T) {
	newTab, a, srv := browserApp(t)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	hs := coreHold(t, a, tn.Buyers[0], ev.ID, seats[:2]...)
	b, err := a.Holds.Purchase(context.Background(), actor(tn.Buyers[0]), ev.ID, uuid.NewString(), []uuid.UUID{hs[0].ID, hs[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	codes := make([]string, 2)
	for i := range b.Tickets {
		if codes[i], err = a.TicketKeys.Code(context.Background(), ticketClaims(b, i)); err != nil {
			t.Fatal(err)
		}
	}
	door, err := a.Accounts.Create(context.Background(), tn.Org.ID, "door@"+tn.Org.Slug+".example", testenv.Password, "door")
	if err != nil {
		t.Fatal(err)
	}
	admitted := func(i int) int {
		var n int
		if err := a.Pool.QueryRow(context.Background(), `SELECT count(*) FROM checkins WHERE ticket_id = $1`, b.Tickets[i].ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	scan := func(code string) []chromedp.Action[chromedp.Void] {
		return []chromedp.Action[chromedp.Void]{
			setField(`[data-testid=scan-code]`, code),
			// As a USB scanner's Enter does: the form's submit event.
			chromedp.Evaluate[chromedp.Void](`document.getElementById("scan-form").requestSubmit()`),
		}
	}
	ctx, cancel := context.WithTimeout(newTab(), 120*time.Second)
	defer cancel()
	problems := consoleErrors(t, ctx)
	steps := append(signIn(srv.URL, tn.Org.Slug, door.Email),
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(css(`[data-testid=door-events]`)),
		chromedp.Navigate(srv.URL+"/door/e/"+ev.ID.String()+"?entrance=North"),
		waitText(`[data-testid=scan-network]`, "online"))
	steps = append(steps, scan(codes[0])...)
	steps = append(steps, waitText(`[data-testid=scan-verdict]`, "Admitted"))
	if err := chromedp.Do(ctx, steps...); err != nil {
		diagnose(t, ctx, "scanner-first")
		t.Fatalf("first scan: %v (console: %v)", err, problems())
	}
	screenshot(t, ctx, "scanner.png")
	if n := admitted(0); n != 1 {
		t.Fatalf("ticket 1 admitted %d times, want 1", n)
	}
	again := append(scan(codes[0]), waitText(`[data-testid=scan-verdict]`, "Already admitted"),
		waitText(`[data-testid=scan-detail]`, "North"))
	if err := chromedp.Do(ctx, again...); err != nil {
		diagnose(t, ctx, "scanner-again")
		t.Fatalf("second scan: %v", err)
	}

	down := append([]chromedp.Action[chromedp.Void]{offline(true), waitText(`[data-testid=scan-network]`, "offline")}, scan(codes[1])...)
	down = append(down, waitText(`[data-testid=scan-verdict]`, "Admitted"), waitText(`[data-testid=scan-detail]`, "decided offline"),
		waitText(`[data-testid=scan-pending]`, "1 scans to sync"))
	if err := chromedp.Do(ctx, down...); err != nil {
		diagnose(t, ctx, "scanner-offline")
		t.Fatalf("offline scan: %v", err)
	}
	if n := admitted(1); n != 0 {
		t.Fatalf("ticket 2 reached the server while offline (%d)", n)
	}
	if err := chromedp.Do(ctx, offline(false)); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 30*time.Second, "the offline scan synced", func() bool { return admitted(1) == 1 })
}
