package hold_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/payment"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestPaymentSummaryCSVAndWebhooks: the organizer's figures per category
// (paid, pending, refunded), payments.csv with a provider's message that
// would be a formula escaped, and integrators' booking.paid,
// payment.failed and refund.succeeded deliveries in the outbox.
func TestPaymentSummaryCSVAndWebhooks(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{stripe: true})
	ctx := context.Background()
	org := organizer(e.tn)
	box := staff(e.tn.BoxOffice)
	if _, err := e.a.Store.Webhooks.CreateEndpoint(ctx, e.tn.Org.ID, nil, "https://hooks.example/seatd",
		[]string{"booking.paid", "payment.failed", "refund.succeeded"}, "whsec_test"); err != nil {
		t.Fatal(err)
	}

	e.hold(0, e.seats[0], e.seats[1]) // front: paid, then one refunded
	paid := e.start(0, "paid").Payment
	ok := e.mustDeliver(intentEvent("evt_s_paid", payment.EventIntentSucceeded, paid, time.Now(), "succeeded", ""), "applied")
	e.hold(1, e.seats[10], e.seats[11]) // back: pending
	e.start(1, "pending")
	e.hold(2, e.seats[2]) // front: declined (still pending: the buyer may try again)
	failed := e.start(2, "failed").Payment
	e.mustDeliver(intentEvent("evt_s_fail", payment.EventIntentFailed, failed, time.Now(), "requires_payment_method",
		`=HYPERLINK("http://evil.example")`), "applied")

	b, err := e.a.BoxOffice.Booking(ctx, box, ok.Booking)
	if err != nil {
		t.Fatal(err)
	}
	_, r, err := e.pays.Cancel(ctx, box, b.ID, []uuid.UUID{ticketOf(t, b, e.seats[0])}, "refund one")
	if err != nil || r == nil {
		t.Fatalf("cancel: %+v %v", r, err)
	}
	if r.Status != store.RefundSucceeded {
		p := e.payment(paid.ID)
		e.mustDeliver(refundEvent("evt_s_ref", payment.EventRefundUpdated, p, *r, "re_s", "succeeded", time.Now()), "applied")
	}

	sum, err := e.pays.Summary(ctx, box, e.ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.PaymentSummary{
		{Category: "front", Name: "Front", Currency: "EUR", PaidMinor: 10000, PaidSeats: 2, PendingMinor: 5000, PendingSeats: 1,
			RefundedMinor: 5000, RefundedSeats: 1},
		{Category: "back", Name: "Back", Currency: "EUR", PendingMinor: 5000, PendingSeats: 2},
	}
	if !slices.Equal(sum, want) {
		t.Errorf("summary\n got %+v\nwant %+v", sum, want)
	}
	if _, err := e.pays.Summary(ctx, e.buyer(0), e.ev.ID); !isCode(err, apperr.Forbidden) {
		t.Errorf("buyer summary: %v", err)
	}

	var out bytes.Buffer
	if err := e.pays.WriteCSV(ctx, org, e.ev.ID, &out); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || !slices.Equal(rows[0], hold.PaymentCSVColumns) {
		t.Fatalf("csv %q", rows)
	}
	col := func(name string) int { return slices.Index(hold.PaymentCSVColumns, name) }
	byID := map[string][]string{}
	for _, row := range rows[1:] {
		byID[row[col("payment_id")]] = row
	}
	if got := byID[failed.ID.String()][col("failure_message")]; got != `'=HYPERLINK("http://evil.example")` {
		t.Errorf("failure message cell %q", got)
	}
	if row := byID[paid.ID.String()]; row[col("status")] != "partially_refunded" || row[col("booking_reference")] != b.Reference ||
		row[col("refunded_minor")] != "5000" || row[col("seats")] != "S-A-1 S-A-2" {
		t.Errorf("paid row %q", row)
	}
	if err := e.pays.WriteCSV(ctx, box, e.ev.ID, &out); !isCode(err, apperr.Forbidden) {
		t.Errorf("box office export: %v", err)
	}

	types := map[string]int{}
	dr, err := e.a.Pool.Query(ctx, `SELECT type FROM webhook_deliveries WHERE org_id = $1`, e.tn.Org.ID)
	if err != nil {
		t.Fatal(err)
	}
	for dr.Next() {
		var typ string
		if err := dr.Scan(&typ); err != nil {
			t.Fatal(err)
		}
		types[typ]++
	}
	if types["booking.paid"] != 1 || types["payment.failed"] != 1 || types["refund.succeeded"] != 1 || len(types) != 3 {
		t.Errorf("deliveries by type %v", types)
	}
	if n := count(t, e.a, `SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND type = 'booking.paid' AND data->>'payment_id' = $2`,
		e.tn.Org.ID, paid.ID.String()); n != 1 {
		t.Errorf("booking.paid delivery without its payment_id")
	}
}

// TestPaymentHoldsFollowedByRedis: the holds a payment keeps to its
// deadline are kept so in Redis too (the lock's TTL and the expiry set
// follow the feed), and the reaper leaves them.
func TestPaymentHoldsFollowedByRedis(t *testing.T) {
	t.Parallel()
	e := newPayEnv(t, payOpts{ttl: 40 * time.Minute})
	testenv.Background(t, e.a)
	ctx := context.Background()
	hs := e.hold(0, e.seats[7])
	p := e.start(0, "k").Payment
	h := hs[0]
	h.HeldUntil = p.Deadline
	testsvc.Eventually(t, 10*time.Second, "the lock to follow the payment's deadline", func() bool {
		ttl, err := e.a.Redis.PTTL(ctx, e.a.Locks.Keys(e.tn.Org.ID, e.ev.ID).Seat(h.SeatID)).Result()
		return err == nil && ttl > time.Until(p.Deadline)
	})
	assertLockFollows(t, e.a, e.tn.Org.ID, e.ev.ID, h)
	if _, err := e.a.Reaper.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	if n := activeHolds(t, e.a, e.ev.ID)[h.SeatID]; n != 1 {
		t.Errorf("%d active holds after a reaper pass", n)
	}
}
