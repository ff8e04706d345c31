package hold_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/payment"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestPaymentEventsDuplicateAndReordered: Stripe's events delivered again
// and out of order (the intent made by stripe-mock): an older decline
// after processing changes nothing, a redelivery is a duplicate,
// processing after succeeded changes nothing, and a second success (a new
// event id) makes no second booking; an event naming a payment that is not
// seatd's is answered and ignored.
func TestPaymentEventsDuplicateAndReordered(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{stripe: true})
	e.hold(0, e.seats[0], e.seats[1])
	p := e.start(0, "k").Payment
	t0 := time.Now().Add(time.Second)

	e.mustDeliver(intentEvent("evt_proc", payment.EventIntentProcessing, p, t0.Add(10*time.Second), "processing", ""), "applied")
	e.mustDeliver(intentEvent("evt_proc", payment.EventIntentProcessing, p, t0.Add(10*time.Second), "processing", ""), "duplicate")
	// A decline of an earlier attempt, delivered late.
	e.mustDeliver(intentEvent("evt_fail", payment.EventIntentFailed, p, t0.Add(5*time.Second), "requires_payment_method", "declined"), "ignored")
	if got := e.payment(p.ID); got.Status != store.PaymentProcessing || got.FailureMessage != "" {
		t.Fatalf("after a late decline: %+v", got)
	}
	ok := e.mustDeliver(intentEvent("evt_ok", payment.EventIntentSucceeded, p, t0.Add(20*time.Second), "succeeded", ""), "applied")
	if ok.Booking == uuid.Nil {
		t.Fatal("success made no booking")
	}
	e.mustDeliver(intentEvent("evt_ok", payment.EventIntentSucceeded, p, t0.Add(20*time.Second), "succeeded", ""), "duplicate")
	e.mustDeliver(intentEvent("evt_proc2", payment.EventIntentProcessing, p, t0.Add(30*time.Second), "processing", ""), "ignored")
	e.mustDeliver(intentEvent("evt_fail2", payment.EventIntentFailed, p, t0.Add(40*time.Second), "requires_payment_method", "late"), "ignored")
	e.mustDeliver(intentEvent("evt_canc", payment.EventIntentCanceled, p, t0.Add(50*time.Second), "canceled", ""), "ignored")
	again := e.mustDeliver(intentEvent("evt_ok2", payment.EventIntentSucceeded, p, t0.Add(60*time.Second), "succeeded", ""), "ignored")
	if again.Booking != ok.Booking {
		t.Errorf("second success: booking %s, want %s", again.Booking, ok.Booking)
	}
	got := e.payment(p.ID)
	if got.Status != store.PaymentSucceeded || got.BookingID != ok.Booking {
		t.Fatalf("payment %+v", got)
	}
	if n := count(t, e.a, `SELECT count(*) FROM bookings WHERE org_id = $1 AND payment_id = $2`, e.tn.Org.ID, p.ID); n != 1 {
		t.Errorf("%d bookings for the payment", n)
	}
	// A payment of another database on the same provider account.
	ghost := p
	ghost.ID, ghost.IntentID = uuid.New(), "pi_elsewhere"
	e.mustDeliver(intentEvent("evt_ghost", payment.EventIntentSucceeded, ghost, time.Now(), "succeeded", ""), "unknown")
	ghost.OrgID = uuid.New()
	e.mustDeliver(intentEvent("evt_ghost2", payment.EventIntentSucceeded, ghost, time.Now(), "succeeded", ""), "unknown")
	results := map[string]string{}
	rows, err := e.a.Pool.Query(context.Background(), `SELECT event_id, result FROM payment_events WHERE payment_id = $1`, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, res string
		if err := rows.Scan(&id, &res); err != nil {
			t.Fatal(err)
		}
		results[id] = res
	}
	if len(results) != 7 || results["evt_ok"] != "applied" || results["evt_fail"] != "ignored" || results["evt_proc2"] != "ignored" {
		t.Errorf("events recorded %v", results)
	}
	assertSeatInvariants(t, e.a, e.ev.ID)
}

// TestPaymentTwentyParallelSuccesses: twenty copies of one success posted
// at once to the endpoint, and twenty successes with ids of their own
// applied at once, make one booking.
func TestPaymentTwentyParallelSuccesses(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{stripe: true})
	e.hold(0, e.seats[5], e.seats[15])
	p := e.start(0, "k").Payment
	body := intentEvent("evt_once", payment.EventIntentSucceeded, p, time.Now(), "succeeded", "")

	var wg sync.WaitGroup
	statuses := make([]int, 40)
	errs := make([]error, 40)
	for i := range 40 {
		wg.Go(func() {
			b := body
			if i >= 20 {
				b = intentEvent(fmt.Sprintf("evt_copy_%d", i), payment.EventIntentSucceeded, p, time.Now(), "succeeded", "")
			}
			statuses[i], errs[i] = e.post(b)
		})
	}
	wg.Wait()
	for i := range statuses {
		if errs[i] != nil || statuses[i] != 200 {
			t.Errorf("delivery %d: %d %v", i, statuses[i], errs[i])
		}
	}
	if n := count(t, e.a, `SELECT count(*) FROM bookings WHERE org_id = $1 AND payment_id = $2`, e.tn.Org.ID, p.ID); n != 1 {
		t.Fatalf("%d bookings", n)
	}
	if n := count(t, e.a, `SELECT count(*) FROM tickets t JOIN bookings b ON b.id = t.booking_id WHERE b.payment_id = $1`, p.ID); n != 2 {
		t.Errorf("%d tickets", n)
	}
	if n := count(t, e.a, `SELECT count(*) FROM payment_events WHERE payment_id = $1`, p.ID); n != 21 {
		t.Errorf("%d events recorded, want 21 (one per id)", n)
	}
	if n := count(t, e.a, `SELECT count(*) FROM audit_log WHERE org_id = $1 AND action = 'booking.paid'`, e.tn.Org.ID); n != 1 {
		t.Errorf("%d booking.paid audit rows", n)
	}
	assertSeatInvariants(t, e.a, e.ev.ID)
}

// TestPaymentConfirmedWhileRedisIsDown: a success applied while Redis is
// down makes its one booking all the same (Postgres decides; the
// event's locks are synced again when Redis is back), copies of it at
// once included.
func TestPaymentConfirmedWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	r := testsvc.StartRedis(t)
	e := newPayEnv(t, payOpts{stripe: true, app: func(t *testing.T) *app.App {
		return testenv.App(t, onRedis(r, 200*time.Millisecond))
	}})
	testenv.Background(t, e.a)
	e.hold(0, e.seats[2], e.seats[3])
	p := e.start(0, "k").Payment
	r.Stop()
	body := intentEvent("evt_redis_down", payment.EventIntentSucceeded, p, time.Now(), "succeeded", "")
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if status, err := e.post(body); err != nil || status != 200 {
				t.Errorf("delivery: %d %v", status, err)
			}
		})
	}
	wg.Wait()
	if n := count(t, e.a, `SELECT count(*) FROM bookings WHERE org_id = $1 AND payment_id = $2`, e.tn.Org.ID, p.ID); n != 1 {
		t.Fatalf("%d bookings", n)
	}
	assertSeatInvariants(t, e.a, e.ev.ID)
}
