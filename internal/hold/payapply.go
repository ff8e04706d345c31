package hold

// Applying what the payment provider says: its signed webhooks, and its
// answers to the questions seatd asks (retrieve, cancel, refund), all
// through apply — the one path that makes a booking from a payment.

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/payment"
	"seatd/internal/pg"
	"seatd/internal/store"
)

// Applied is what a provider event did.
type Applied struct {
	// Payment is the payment it was about (uuid.Nil: none of seatd's).
	Payment uuid.UUID
	// Result: "applied" (it changed the payment), "duplicate" (it was
	// applied before), "ignored" (it changed nothing: older news, a type
	// seatd does not act on), "unknown" (no payment of seatd's).
	Result string
	// Booking is the booking it made, if any (uuid.Nil otherwise).
	Booking uuid.UUID
}

// Webhook is the provider's webhook endpoint's work (POST
// /webhooks/stripe): body is the request's body (at most
// payment.MaxEventBytes), header its payment.SignatureHeader. A missing,
// wrong or stale signature is refused with apperr.BadRequest (answer 400:
// nothing changed, and the provider sends it again); any other error is
// ours (answer 500: the provider sends it again). Every other outcome,
// an event seatd ignores included, is answered 200.
func (p *Payments) Webhook(ctx context.Context, body []byte, header string) (Applied, error) {
	ev, err := p.verify.Verify(body, header)
	if err != nil {
		if errors.Is(err, payment.ErrSignature) {
			p.m.Refused.Inc()
			p.e.log.Warn("payment webhook refused", "err", err)
		}
		return Applied{}, err
	}
	return p.Apply(ctx, ev)
}

// Apply applies a verified provider event to its payment, exactly once per
// event id. payment_intent.succeeded makes the payment's booking (or,
// when a seat was taken after the payment's holds lapsed, refunds the
// whole payment); payment_failed records the decline and leaves the holds
// until their time; processing and canceled follow the intent; refund and
// charge.refunded events follow the refunds. An event older than what the
// payment knows changes nothing.
func (p *Payments) Apply(ctx context.Context, ev payment.Event) (Applied, error) {
	ch, ok := changeOf(ev)
	if !ok {
		p.m.Events.WithLabelValues("ignored").Inc()
		return Applied{Result: "ignored"}, nil
	}
	org, id, err := p.find(ctx, ev)
	if errors.Is(err, errUnknownPayment) {
		// Another system's intent on the same account, or a payment of
		// another seatd database: not ours to answer.
		p.m.Events.WithLabelValues("unknown").Inc()
		return Applied{Result: "unknown"}, nil
	}
	if err != nil {
		return Applied{}, err
	}
	res, err := p.apply(ctx, org, id, ch)
	if apperr.CodeOf(err) == apperr.NotFound {
		// Named by its metadata, but not in this database (another
		// deployment on the same provider account).
		p.m.Events.WithLabelValues("unknown").Inc()
		return Applied{Result: "unknown"}, nil
	}
	if err != nil {
		return Applied{Payment: id}, err
	}
	out := Applied{Payment: id, Result: "ignored", Booking: res.Payment.BookingID}
	switch {
	case res.Duplicate:
		out.Result = "duplicate"
	case res.Changed:
		out.Result = "applied"
	}
	p.m.Events.WithLabelValues(out.Result).Inc()
	if res.Booking != nil && !ev.Created.IsZero() {
		p.m.ConfirmLatency.Observe(max(p.e.now().Sub(ev.Created).Seconds(), 0))
	}
	return out, nil
}

// find names the payment an event is about: from its metadata (what
// seatd wrote on the intent or refund), else by its intent.
func (p *Payments) find(ctx context.Context, ev payment.Event) (org, id uuid.UUID, err error) {
	org, err1 := uuid.Parse(ev.OrgID)
	id, err2 := uuid.Parse(ev.PaymentID)
	if err1 == nil && err2 == nil {
		return org, id, nil
	}
	if ev.IntentID == "" {
		return uuid.Nil, uuid.Nil, errUnknownPayment
	}
	org, id, err = p.e.store.Payments.ByIntent(ctx, ev.IntentID)
	if apperr.CodeOf(err) == apperr.NotFound {
		return uuid.Nil, uuid.Nil, errUnknownPayment
	}
	return org, id, err
}

// changeOf reads an event as a change of its payment; false for a type
// seatd does not act on.
func changeOf(ev payment.Event) (store.PaymentChange, bool) {
	ch := store.PaymentChange{EventID: ev.ID, Type: string(ev.Type), At: ev.Created, IntentID: ev.IntentID}
	switch ev.Type {
	case payment.EventIntentSucceeded, payment.EventIntentFailed, payment.EventIntentProcessing, payment.EventIntentCanceled:
		ch.Status, ch.FailureMessage = store.PaymentStatus(ev.Status), ev.FailureMessage
	case payment.EventChargeRefunded:
		ch.ChargeRefunded = ev.AmountRefunded
		if ev.Refund != nil {
			ch.Refund = refundChangeOf(*ev.Refund)
		}
	case payment.EventRefundCreated, payment.EventRefundUpdated, payment.EventRefundFailed, payment.EventChargeRefundUpdated:
		if ev.Refund == nil {
			return ch, false
		}
		ch.Refund = refundChangeOf(*ev.Refund)
	default:
		return ch, false
	}
	return ch, true
}

func refundChangeOf(r payment.Refund) *store.RefundChange {
	id, _ := uuid.Parse(r.RefundID) // uuid.Nil when it names none
	return &store.RefundChange{RefundID: id, ProviderID: r.ID, Status: store.RefundStatus(r.Status), FailureReason: r.FailureReason}
}

// answerOf reads the provider's answer about an intent (a retrieve, a
// cancel) as a change: the intent's state now.
func answerOf(in payment.Intent, now time.Time) store.PaymentChange {
	return store.PaymentChange{At: now, IntentID: in.ID, Status: store.PaymentStatus(in.Status), FailureMessage: in.FailureMessage}
}

// apply applies a change to a payment, then does what the change asks of
// this process: publishes a booking's seats (as a purchase does: the
// holds' locks go, every map shows them sold, the waitlist panel of an
// offer's buyer follows), sends a refund it decided, counts outcomes.
// A transaction that met another one (a deadlock, a lock wait past the
// timeout, a booking reference drawn twice) is run again: it changed
// nothing.
func (p *Payments) apply(ctx context.Context, org, id uuid.UUID, ch store.PaymentChange) (store.PaymentApplied, error) {
	var res store.PaymentApplied
	var err error
	for attempt := 1; ; attempt++ {
		res, err = p.e.store.Payments.Apply(context.WithoutCancel(ctx), org, id, ch, p.opt.SeatsTakenMail)
		again := pg.IsDeadlock(err) || pg.IsLockNotAvailable(err) || pg.IsUniqueViolationOf(err, "bookings_reference")
		if !again || attempt == 5 {
			break
		}
		select {
		case <-ctx.Done():
			return res, err
		case <-time.After(time.Duration(attempt*25+rand.IntN(50)) * time.Millisecond): // #nosec G404 -- jitter
		}
	}
	if err != nil {
		return res, err
	}
	if res.Duplicate || !res.Changed {
		return res, nil
	}
	pay := res.Payment
	switch {
	case res.Booking != nil:
		p.m.Outcomes.WithLabelValues("booked").Inc()
		p.e.commitSale(ctx, org, pay.EventID, Actor{Org: org, User: pay.UserID, Role: RoleBuyer}, *res.Booking)
		if res.Booking.Offer {
			p.e.publishWaitlist(ctx, org, pay.EventID, WaitlistChange{Users: []uuid.UUID{pay.UserID}})
		}
	case res.Refund != nil:
		p.m.Outcomes.WithLabelValues("refunded_seats_taken").Inc()
		p.m.Refunds.WithLabelValues("requested").Inc()
		p.e.log.Warn("payment succeeded after its seats were taken: refunded in full", "org", org, "payment", id,
			"reason", pay.RefundReason)
	case ch.Status == store.PaymentFailed && pay.Status == store.PaymentFailed:
		p.m.Outcomes.WithLabelValues("failed").Inc()
	case ch.Status == store.PaymentCanceled && pay.Status == store.PaymentCanceled:
		p.m.Outcomes.WithLabelValues("canceled").Inc()
	}
	p.m.Refunds.WithLabelValues("succeeded").Add(float64(len(res.Refunded)))
	p.m.Refunds.WithLabelValues("failed").Add(float64(len(res.RefundsFailed)))
	if res.Refund != nil {
		p.send(ctx, *res.Refund)
	}
	return res, nil
}
