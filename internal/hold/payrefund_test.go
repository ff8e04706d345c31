package hold_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/payment"
	"seatd/internal/store"
	"seatd/internal/testsvc"
)

// paidBooking holds seats for buyer i, pays with the test provider and
// answers the booking.
func paidBooking(t *testing.T, e *payEnv, i int, key string, seats ...uuid.UUID) (store.Payment, store.Booking) {
	t.Helper()
	e.hold(i, seats...)
	st := e.start(i, key)
	if _, err := e.card(st, payment.CardSucceeds); err != nil {
		t.Fatal(err)
	}
	p := e.payment(st.Payment.ID)
	b, err := e.a.BoxOffice.Booking(context.Background(), staff(e.tn.BoxOffice), p.BookingID)
	if err != nil {
		t.Fatalf("booking of payment %+v: %v", p, err)
	}
	return p, b
}

// ticketOf is the booking's ticket for a seat.
func ticketOf(t *testing.T, b store.Booking, seat uuid.UUID) uuid.UUID {
	t.Helper()
	for _, tk := range b.Tickets {
		if tk.SeatID == seat {
			return tk.ID
		}
	}
	t.Fatalf("no ticket for seat %s", seat)
	return uuid.Nil
}

// TestPaymentCancelRefunds: staff cancel one ticket of a paid booking and
// its price is refunded through the provider (the booking is partly
// refunded, the seat on sale again once); cancelling it again is refused
// and refunds nothing; cancelling the rest refunds the rest. The box
// office's plain cancellation refuses a booking paid online.
func TestPaymentCancelRefunds(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{})
	ctx := context.Background()
	box := staff(e.tn.BoxOffice)
	p, b := paidBooking(t, e, 0, "k", e.seats[0], e.seats[10], e.seats[11])

	if _, err := e.a.BoxOffice.Cancel(ctx, box, b.ID, nil, "no refund"); !isCode(err, apperr.Conflict) {
		t.Fatalf("box office cancel of a paid booking: %v", err)
	}
	if _, _, err := e.pays.Cancel(ctx, e.buyer(0), b.ID, nil, "mine"); !isCode(err, apperr.Forbidden) {
		t.Errorf("buyer cancel: %v", err)
	}
	one := ticketOf(t, b, e.seats[10])
	_, r, err := e.pays.Cancel(ctx, box, b.ID, []uuid.UUID{one}, "changed plans")
	if err != nil {
		t.Fatal(err)
	}
	if r == nil || r.AmountMinor != 2500 || r.Status != store.RefundSucceeded || r.Reason != store.RefundCancelled || r.ProviderRefundID == "" {
		t.Fatalf("refund %+v", r)
	}
	if got := e.payment(p.ID); got.Status != store.PaymentPartiallyRefunded || got.RefundedMinor != 2500 {
		t.Fatalf("payment %+v", got)
	}
	if n := count(t, e.a, `SELECT count(*) FROM seats WHERE id = $1 AND status = 'available'`, e.seats[10]); n != 1 {
		t.Error("the cancelled seat is not on sale")
	}
	if n := count(t, e.a, `SELECT count(*) FROM audit_log WHERE seat_id = $1 AND action = 'booking.cancelled'`, e.seats[10]); n != 1 {
		t.Errorf("%d booking.cancelled rows for the seat", n)
	}
	if _, _, err := e.pays.Cancel(ctx, box, b.ID, []uuid.UUID{one}, "again"); !isCode(err, apperr.Conflict) {
		t.Fatalf("cancelling a cancelled ticket: %v", err)
	}
	if _, err := e.pays.RetryRefund(ctx, box, r.ID); !isCode(err, apperr.Conflict) {
		t.Errorf("retrying a refund that succeeded: %v", err)
	}
	if _, rest, err := e.pays.Cancel(ctx, box, b.ID, nil, "all of it"); err != nil || rest == nil || rest.AmountMinor != 7500 {
		t.Fatalf("cancel the rest: %+v %v", rest, err)
	}
	got := e.payment(p.ID)
	if got.Status != store.PaymentRefunded || got.RefundedMinor != 10000 || len(got.Refunds) != 2 {
		t.Fatalf("payment %+v", got)
	}
	in, err := e.test.Retrieve(ctx, p.IntentID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.test.Refund(ctx, payment.RefundRequest{IntentID: in.ID, IdempotencyKey: "more"}); !isCode(err, apperr.Conflict) {
		t.Errorf("the provider still had money to refund: %v", err)
	}
	if n := count(t, e.a, `SELECT count(*) FROM audit_log WHERE org_id = $1 AND action = 'refund.succeeded'`, e.tn.Org.ID); n != 2 {
		t.Errorf("%d refund.succeeded audit rows", n)
	}
	assertSeatInvariants(t, e.a, e.ev.ID)
}

// TestRefundSentTwiceIsOneRefund: a refund whose answer was never stored
// (written, then the process stopped) is sent again at once by staff and
// by the reconciler, concurrently, with its one key: the provider makes
// one refund.
func TestRefundSentTwiceIsOneRefund(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{after: time.Millisecond})
	ctx := context.Background()
	box := staff(e.tn.BoxOffice)
	p, b := paidBooking(t, e, 1, "k", e.seats[3], e.seats[4])
	// The cancellation and its refund commit; the refund is not sent.
	_, _, r, err := e.a.Store.Payments.CancelBooking(ctx, e.tn.Org.ID, b.ID, e.tn.BoxOffice.ID, nil, "stopped midway")
	if err != nil || r == nil {
		t.Fatalf("cancel: %+v %v", r, err)
	}
	if _, err := e.a.Pool.Exec(ctx, `UPDATE refunds SET next_check_at = now() WHERE id = $1`, r.ID); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if _, err := e.pays.RetryRefund(ctx, box, r.ID); err != nil && !isCode(err, apperr.Conflict) {
				t.Errorf("retry: %v", err)
			}
		})
	}
	wg.Go(func() {
		if _, err := e.pays.Reconcile(ctx); err != nil {
			t.Errorf("reconcile: %v", err)
		}
	})
	wg.Wait()
	got := e.payment(p.ID)
	if got.Status != store.PaymentRefunded || len(got.Refunds) != 1 || got.Refunds[0].Status != store.RefundSucceeded {
		t.Fatalf("payment %+v", got)
	}
	var n int
	if err := e.a.Pool.QueryRow(ctx, `SELECT jsonb_array_length(test_intent->'Refunds') FROM payments WHERE id = $1`, p.ID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the provider made %d refunds (%v)", n, err)
	}
}

// TestRefundFailsLateAndIsRetried: a refund the provider reports failed
// after it succeeded (stripe-mock's refund, then Stripe's refund.failed)
// is shown to staff and retried as a new attempt with a key of its own.
func TestRefundFailsLateAndIsRetried(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{stripe: true})
	ctx := context.Background()
	box := staff(e.tn.BoxOffice)
	e.hold(0, e.seats[5])
	p := e.start(0, "k").Payment
	ok := e.mustDeliver(intentEvent("evt_paid", payment.EventIntentSucceeded, p, time.Now(), "succeeded", ""), "applied")
	b, err := e.a.BoxOffice.Booking(ctx, box, ok.Booking)
	if err != nil {
		t.Fatal(err)
	}
	_, r, err := e.pays.Cancel(ctx, box, b.ID, nil, "refund")
	if err != nil || r == nil {
		t.Fatalf("cancel: %+v %v", r, err)
	}
	p = e.payment(p.ID)
	// stripe-mock answers the refund succeeded at once, as a card's
	// refund usually is; then the event says nothing new.
	e.mustDeliver(refundEvent("evt_r_ok", payment.EventRefundUpdated, p, *r, "re_seatd_1", "succeeded", time.Now()), news(r.Status))
	e.mustDeliver(refundEvent("evt_r_fail", payment.EventRefundFailed, p, *r, "re_seatd_1", "failed", time.Now()), "applied")
	failed, err := e.pays.FailedRefunds(ctx, box)
	if err != nil || len(failed) != 1 || failed[0].ID != r.ID || failed[0].FailureReason != "expired_or_canceled_card" {
		t.Fatalf("failed refunds %+v %v", failed, err)
	}
	if got := e.payment(p.ID); got.Status != store.PaymentSucceeded || got.RefundedMinor != 0 {
		t.Errorf("payment after the refund failed: %+v", got)
	}
	again, err := e.pays.RetryRefund(ctx, box, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again.Attempt != 2 || again.IdempotencyKey == r.IdempotencyKey || again.Status == store.RefundFailed {
		t.Fatalf("retried refund %+v", again)
	}
	e.mustDeliver(refundEvent("evt_r_ok2", payment.EventRefundUpdated, p, again, "re_seatd_2", "succeeded", time.Now()), news(again.Status))
	if got := e.payment(p.ID); got.Status != store.PaymentRefunded {
		t.Errorf("payment after the retry: %+v", got)
	}
	if failed, _ := e.pays.FailedRefunds(ctx, box); len(failed) != 0 {
		t.Errorf("failed refunds after the retry: %+v", failed)
	}
}

// news is what a refund.updated saying succeeded does to a refund in
// status s.
func news(s store.RefundStatus) string {
	if s == store.RefundSucceeded {
		return "ignored"
	}
	return "applied"
}

// TestReconcilerAppliesLostSuccess: the success's webhook never arrives
// (the endpoint fails), and the reconciler asks the test provider and
// books; a delayed card's success, whose webhook is lost too, is found
// the same way once its time has come; a payment nobody paid by its
// deadline is canceled and lets its holds go.
func TestReconcilerAppliesLostSuccess(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{after: time.Millisecond, settle: 300 * time.Millisecond})
	ctx := context.Background()
	e.lose.Store(true)

	e.hold(0, e.seats[12])
	lost := e.start(0, "lost")
	if _, err := e.card(lost, payment.CardSucceeds); err != nil {
		t.Fatal(err)
	}
	if p := e.payment(lost.Payment.ID); p.Status != store.PaymentRequiresPayment {
		t.Fatalf("the lost webhook was applied: %+v", p)
	}
	e.hold(1, e.seats[13])
	late := e.start(1, "late")
	if _, err := e.card(late, payment.CardDelayed); err != nil {
		t.Fatal(err)
	}
	e.hold(2, e.seats[14])
	unpaid := e.start(2, "unpaid")
	if _, err := e.a.Pool.Exec(ctx, `UPDATE payments SET deadline = now() - interval '1 second' WHERE id = $1`, unpaid.Payment.ID); err != nil {
		t.Fatal(err)
	}

	testsvc.Eventually(t, 10*time.Second, "the reconciler to book both and cancel the unpaid", func() bool {
		if _, err := e.pays.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		return e.payment(lost.Payment.ID).BookingID != uuid.Nil && e.payment(late.Payment.ID).BookingID != uuid.Nil &&
			e.payment(unpaid.Payment.ID).Status == store.PaymentCanceled
	})
	if n := count(t, e.a, `SELECT count(*) FROM seat_holds WHERE payment_id = $1 AND status = 'active'`, unpaid.Payment.ID); n != 0 {
		t.Errorf("the canceled payment still marks %d holds", n)
	}
	mine, err := e.a.Holds.Mine(ctx, e.buyer(2), e.ev.ID)
	if err != nil || len(mine) != 1 {
		t.Fatalf("holds of the canceled payment's buyer: %+v %v", mine, err)
	}
	if _, err := e.a.Holds.Release(ctx, e.buyer(2), mine[0].ID, ""); err != nil {
		t.Errorf("release after the payment was canceled: %v", err)
	}
	assertSeatInvariants(t, e.a, e.ev.ID)
}

// TestPaymentAbandon: the buyer gives up a payment: the intent is canceled
// and the holds are plain holds again, which the buyer may release.
func TestPaymentAbandon(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{})
	ctx := context.Background()
	hs := e.hold(0, e.seats[15])
	st := e.start(0, "k")
	if _, err := e.pays.Abandon(ctx, e.buyer(1), st.Payment.ID); !isCode(err, apperr.NotFound) {
		t.Errorf("another buyer abandoned it: %v", err)
	}
	p, err := e.pays.Abandon(ctx, e.buyer(0), st.Payment.ID)
	if err != nil || p.Status != store.PaymentCanceled {
		t.Fatalf("abandon: %+v %v", p, err)
	}
	if _, err := e.pays.ClientSecret(ctx, e.buyer(0), p.ID); !isCode(err, apperr.Conflict) {
		t.Errorf("secret of a canceled payment: %v", err)
	}
	if _, err := e.a.Holds.Release(ctx, e.buyer(0), hs[0].ID, ""); err != nil {
		t.Errorf("release: %v", err)
	}
}
