package web

import (
	"net/http"
	"testing"

	"seatd/internal/testenv"
)

// TestCartPayStateAfterRefetch: the cart renders from the holds alone.
// Once the buyer checked out, every answer for the cart — the checkout's
// own and any re-fetch after it (a live frame, a reconnect), in any order
// — shows the Pay form with one key for those holds; a hold added after
// the checkout brings Checkout back until the buyer checks out again.
func TestCartPayStateAfterRefetch(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	buyer := s.as(tn.Org, tn.Buyers[0])
	e := "/e/" + ev.ID.String()
	coreHold(t, s.app, tn.Buyers[0], ev.ID, seats[0], seats[1])

	before := buyer.do("GET", e+"/cart", nil).want(t, http.StatusOK).doc(t)
	if before.Find(`form[data-cart-pay]`).Length() != 0 || before.Find(`button[hx-post$="/checkout"]`).Length() != 1 {
		t.Fatal("before checkout: the cart does not offer Checkout alone")
	}
	checkout := buyer.do("POST", e+"/checkout", nil).want(t, http.StatusOK).doc(t)
	key, _ := checkout.Find(`form[data-cart-pay] input[name=key]`).Attr("value")
	if key == "" {
		t.Fatal("checkout's answer has no Pay form")
	}
	for i := range 2 {
		again := buyer.do("GET", e+"/cart", nil).want(t, http.StatusOK).doc(t)
		if got, _ := again.Find(`form[data-cart-pay] input[name=key]`).Attr("value"); got != key {
			t.Fatalf("re-fetch %d after checkout: pay key %q, want %q (Checkout shown: %d)", i, got, key,
				again.Find(`button[hx-post$="/checkout"]`).Length())
		}
		if n := again.Find(`form[data-cart-pay] input[name=hold_id]`).Length(); n != 2 {
			t.Fatalf("re-fetch %d: the Pay form lists %d holds, want 2", i, n)
		}
	}

	// A hold made after the checkout: Checkout again, then Pay with another key.
	coreHold(t, s.app, tn.Buyers[0], ev.ID, seats[2])
	mixed := buyer.do("GET", e+"/cart", nil).want(t, http.StatusOK).doc(t)
	if mixed.Find(`form[data-cart-pay]`).Length() != 0 {
		t.Fatal("a hold not checked out is offered for payment")
	}
	again := buyer.do("POST", e+"/checkout", nil).want(t, http.StatusOK).doc(t)
	if k, _ := again.Find(`form[data-cart-pay] input[name=key]`).Attr("value"); k == "" || k == key {
		t.Fatalf("second checkout's pay key %q (first %q)", k, key)
	}
}
