//go:build !fuzzing

package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"seatd/internal/testenv"
)

// TestBrowserCartFetchDuringCheckout: a cart fetch sent while checkout
// is on its way (a live frame's or a reconnect's resync) does not put
// Checkout back over the checked-out holds. The checkout's request is
// held back (CDP Fetch) until the fetch has had its chance to go out:
// had it been answered first, the cart would keep the answer read before
// checkout, and nothing later would take it back to Pay.
func TestBrowserCartFetchDuringCheckout(t *testing.T) {
	newTab, a, srv := browserApp(t)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 8)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	tab, cancel := context.WithTimeout(newTab(), 60*time.Second)
	defer cancel()
	checkout := `#cart button[hx-post$="/checkout"]`
	pay := `#cart form[data-cart-pay] button[type=submit]`
	if err := chromedp.Do(tab, append(signIn(srv.URL, tn.Org.Slug, tn.Buyers[0].Email),
		chromedp.Navigate(srv.URL+"/e/"+ev.ID.String()),
		chromedp.WaitVisible(css(`body[data-live=connected]`)), settled())...); err != nil {
		diagnose(t, tab, "cart-open")
		t.Fatal(err)
	}
	coreHold(t, a, tn.Buyers[0], ev.ID, seats[2])
	if err := chromedp.Do(tab, chromedp.WaitVisible(css(checkout)), settled()); err != nil {
		diagnose(t, tab, "cart-held")
		t.Fatalf("the held seat's checkout: %v", err)
	}

	target, err := chromedp.Run(tab, func(_ context.Context, t *chromedp.Target) (*chromedp.Target, error) { return t, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cdp.Call(tab, target, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
		{URLPattern: "*/checkout", RequestStage: fetch.RequestStageRequest},
		{URLPattern: "*/cart", RequestStage: fetch.RequestStageResponse}}}); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = cdp.Call(tab, target, fetch.Disable, cdp.Empty{}) }()
	paused := make(chan fetch.EventRequestPaused, 8)
	go func() {
		defer close(paused)
		for e, err := range cdp.Events(tab, target, fetch.RequestPaused) {
			if err != nil {
				return
			}
			paused <- e
		}
	}()
	next := func(what string) fetch.EventRequestPaused {
		t.Helper()
		select {
		case e, ok := <-paused:
			if !ok {
				t.Fatalf("%s: the page went away", what)
			}
			return e
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never reached the page", what)
			return fetch.EventRequestPaused{}
		}
	}
	// resume lets a held request (or its answer) go on.
	resume := func(e fetch.EventRequestPaused) error {
		var err error
		if e.ResponseStatusCode != 0 {
			_, err = cdp.Call(tab, target, fetch.ContinueResponse, fetch.ContinueResponseParams{RequestID: e.RequestID})
		} else {
			_, err = cdp.Call(tab, target, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID})
		}
		return err
	}
	pass := func(e fetch.EventRequestPaused) {
		t.Helper()
		if err := resume(e); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`(function () {
		document.querySelector('`+checkout+`').click();
		return true;
	})()`)); err != nil {
		t.Fatal(err)
	}
	post := next("the checkout")
	if post.Request.Method != "POST" || !strings.HasSuffix(post.Request.URL, "/checkout") {
		t.Fatalf("first request held: %s %s, want the checkout's POST", post.Request.Method, post.Request.URL)
	}
	// The cart is fetched again while checkout is on its way. It waits
	// for checkout (queued behind it on #cart); were it sent, the server
	// would answer it now, with the holds as they were before checkout.
	if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`(function () {
		var cart = document.getElementById("cart");
		cart.setAttribute("data-old", "");
		htmx.trigger(cart, "resync");
		return true;
	})()`)); err != nil {
		t.Fatal(err)
	}
	queued := `(document.getElementById("cart")["htmx-internal-data"].queuedRequests || []).length > 0`
	deadline := time.Now().Add(10 * time.Second)
	for sent := false; !sent; {
		select {
		case e := <-paused:
			// Answered before checkout reached the server: let it
			// through and wait for its swap, as a slow checkout would.
			pass(e)
			sent = true
			if err := chromedp.Do(tab, poll(`!document.querySelector("#cart[data-old]")`)); err != nil {
				t.Fatal(err)
			}
		case <-time.After(50 * time.Millisecond):
			ok, err := chromedp.Run(tab, chromedp.Evaluate[bool](queued))
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				sent = true
			}
			if time.Now().After(deadline) {
				t.Fatal("the cart's fetch was neither sent nor queued")
			}
		}
	}
	pass(post)
	// Everything held from now on goes through.
	go func() {
		for e := range paused {
			_ = resume(e) // the page's wait below fails if one is lost
		}
	}()
	if err := chromedp.Do(tab, chromedp.WaitVisible(css(pay)), settled(), chromedp.WaitVisible(css(pay))); err != nil {
		diagnose(t, tab, "cart-checkout-raced")
		t.Fatalf("the cart does not offer Pay after checkout: %v", err)
	}
}
