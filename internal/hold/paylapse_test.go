package hold_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/payment"
	"seatd/internal/store"
)

// TestPaymentSucceedsAfterHoldsLapsed: the success of a payment whose
// holds expired sells its seats when they are still free, or the buyer's
// again (a new hold of theirs is converted); the booking is made on the
// expired hold of a free seat.
func TestPaymentSucceedsAfterHoldsLapsed(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{stripe: true})
	ctx := context.Background()
	hs := e.hold(0, e.seats[6], e.seats[7])
	p := e.start(0, "k").Payment
	e.lapse(hs[0].ID, hs[1].ID)
	again := e.hold(0, e.seats[7]) // the buyer holds one of them again

	res := e.mustDeliver(intentEvent("evt_late", payment.EventIntentSucceeded, p, time.Now(), "succeeded", ""), "applied")
	if res.Booking == uuid.Nil {
		t.Fatalf("no booking: %+v", e.payment(p.ID))
	}
	b, err := e.a.BoxOffice.Booking(ctx, staff(e.tn.BoxOffice), res.Booking)
	if err != nil {
		t.Fatal(err)
	}
	byHold := map[uuid.UUID]uuid.UUID{}
	for _, tk := range b.Tickets {
		byHold[tk.HoldID] = tk.SeatID
	}
	if len(b.Tickets) != 2 || byHold[hs[0].ID] != e.seats[6] || byHold[again[0].ID] != e.seats[7] {
		t.Fatalf("tickets %+v: want seat 6 on its expired hold, seat 7 on the new hold", b.Tickets)
	}
	for _, s := range e.seats[6:8] {
		if n := liveTickets(t, e.a, s); n != 1 {
			t.Errorf("seat %s: %d live tickets", s, n)
		}
	}
	if n := count(t, e.a, `SELECT count(*) FROM seat_holds WHERE id = ANY($1::uuid[]) AND status = 'converted'`,
		[]uuid.UUID{hs[0].ID, again[0].ID}); n != 2 {
		t.Errorf("%d holds converted, want 2", n)
	}
	if n := count(t, e.a, `SELECT active FROM buyer_holds WHERE org_id = $1 AND event_id = $2 AND user_id = $3`,
		e.tn.Org.ID, e.ev.ID, e.tn.Buyers[0].ID); n != 0 {
		t.Errorf("buyer's count of active holds %d, want 0", n)
	}
	assertSeatInvariants(t, e.a, e.ev.ID)
}

// TestPaymentAfterLapseSeatTakenRefunds: a payment succeeds (the test
// provider's card, its webhook) after its holds lapsed and someone else
// took one of its seats: nothing is sold, the whole payment is refunded
// through the provider once, with the reason for the buyer; a success
// delivered again refunds nothing more.
func TestPaymentAfterLapseSeatTakenRefunds(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{})
	hs := e.hold(0, e.seats[8], e.seats[9])
	st := e.start(0, "k")
	e.lapse(hs[0].ID, hs[1].ID)
	e.hold(1, e.seats[9])

	if _, err := e.card(st, payment.CardSucceeds); err != nil {
		t.Fatal(err)
	}
	p := e.payment(st.Payment.ID)
	if p.Status != store.PaymentRefunded || p.BookingID != uuid.Nil || p.RefundedMinor != p.AmountMinor ||
		!strings.Contains(p.RefundReason, "S-A-10") || len(p.Refunds) != 1 {
		t.Fatalf("payment %+v", p)
	}
	r := p.Refunds[0]
	if r.Reason != store.RefundSeatsTaken || r.Status != store.RefundSucceeded || r.AmountMinor != p.AmountMinor || len(r.SeatIDs) != 2 {
		t.Errorf("refund %+v", r)
	}
	for _, s := range e.seats[8:10] {
		if n := liveTickets(t, e.a, s); n != 0 {
			t.Errorf("seat %s sold %d times", s, n)
		}
	}
	if n := activeHolds(t, e.a, e.ev.ID)[e.seats[9]]; n != 1 {
		t.Errorf("the other buyer's hold: %d", n)
	}
	in, err := e.test.Retrieve(context.Background(), p.IntentID)
	if err != nil {
		t.Fatal(err)
	}
	e.mustDeliver(intentEvent("evt_again", payment.EventIntentSucceeded, p, time.Now(), "succeeded", ""), "ignored")
	if n := count(t, e.a, `SELECT count(*) FROM refunds WHERE payment_id = $1`, p.ID); n != 1 {
		t.Errorf("%d refunds after a second success", n)
	}
	if _, err := e.test.Refund(context.Background(), payment.RefundRequest{IntentID: in.ID, IdempotencyKey: "other"}); !isCode(err, apperr.Conflict) {
		t.Errorf("the test provider could refund more: %v", err)
	}
	assertSeatInvariants(t, e.a, e.ev.ID)
}

// TestPaymentOverlappingHolds: a buyer who starts a second payment over
// the holds of a first one not paid yet (a new key: another tab) takes
// them over, and the first intent is canceled: its card page refuses to
// pay it, and the second pays for every seat.
func TestPaymentOverlappingHolds(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{})
	e.hold(0, e.seats[11], e.seats[12])
	first := e.start(0, "tab-1")
	e.hold(0, e.seats[13])
	second := e.start(0, "tab-2")
	if len(second.Payment.Holds) != 3 || second.Payment.AmountMinor != 7500 {
		t.Fatalf("second payment %+v", second.Payment)
	}
	if p := e.payment(first.Payment.ID); p.Status != store.PaymentCanceled {
		t.Fatalf("first payment %s, want canceled", p.Status)
	}
	if _, err := e.card(first, payment.CardSucceeds); !isCode(err, apperr.Conflict) {
		t.Fatalf("paying the canceled first payment: %v", err)
	}
	if _, err := e.card(second, payment.CardSucceeds); err != nil {
		t.Fatal(err)
	}
	if p := e.payment(second.Payment.ID); p.Status != store.PaymentSucceeded || p.BookingID == uuid.Nil {
		t.Fatalf("second payment %+v", p)
	}
	assertSeatInvariants(t, e.a, e.ev.ID)
}

// TestPaymentOverlappingBothPaid: the first payment is paid after all
// (its success arrives once the second took its holds over): it sells its
// seats, and the second's success finds them sold and is refunded in
// full; no seat is sold twice, and the second's own extra seat stays held.
func TestPaymentOverlappingBothPaid(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{stripe: true})
	e.hold(0, e.seats[16], e.seats[17])
	first := e.start(0, "tab-1").Payment
	e.hold(0, e.seats[18])
	second := e.start(0, "tab-2").Payment

	e.mustDeliver(intentEvent("evt_first", payment.EventIntentSucceeded, first, time.Now(), "succeeded", ""), "applied")
	e.mustDeliver(intentEvent("evt_second", payment.EventIntentSucceeded, second, time.Now(), "succeeded", ""), "applied")
	p1, p2 := e.payment(first.ID), e.payment(second.ID)
	if p1.BookingID == uuid.Nil || p1.Status != store.PaymentSucceeded {
		t.Fatalf("first %+v", p1)
	}
	if p2.BookingID != uuid.Nil || p2.RefundReason == "" || len(p2.Refunds) != 1 || p2.Refunds[0].AmountMinor != p2.AmountMinor {
		t.Fatalf("second %+v", p2)
	}
	for _, s := range e.seats[16:19] {
		if n := liveTickets(t, e.a, s); n > 1 {
			t.Errorf("seat %s sold %d times", s, n)
		}
	}
	if n := activeHolds(t, e.a, e.ev.ID)[e.seats[18]]; n != 1 {
		t.Errorf("the extra seat's hold: %d", n)
	}
	assertSeatInvariants(t, e.a, e.ev.ID)
}
