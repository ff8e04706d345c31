package hold

// Refunds: staff cancel paid tickets and the money goes back through the
// provider, once, whatever is retried.

import (
	"context"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/payment"
	"seatd/internal/store"
)

// Cancel cancels some tickets of a booking (all when none are listed) for
// staff, with a reason for the audit log, exactly as BoxOffice.Cancel does
// (the seats are on sale again once, through the feed), and for a booking
// paid online refunds the cancelled tickets' prices through the provider:
// the refund is written in the cancellation's transaction and sent with
// an idempotency key of its own, so a cancellation retried refunds
// nothing more and a refund sent again is one refund. The refund is
// answered as it stands after sending (nil for a booking not paid
// online); one the provider refused is failed and can be retried
// (RetryRefund); one it did not answer is sent again by the reconciler.
func (p *Payments) Cancel(ctx context.Context, a Actor, booking uuid.UUID, ticketIDs []uuid.UUID, reason string) (store.Booking, *store.Refund, error) {
	if !a.Staff() {
		return store.Booking{}, nil, apperr.E(apperr.Forbidden, "only box-office staff can cancel bookings")
	}
	reason, err := cancelReason(reason)
	if err != nil {
		return store.Booking{}, nil, err
	}
	return p.cancelBooking(ctx, a, booking, ticketIDs, reason)
}

// CancelMine cancels the buyer's own booking paid online, whole, and
// refunds it through the provider as a staff cancellation does, while the
// event lets buyers cancel: until its BuyerCancelHours before the start.
// Another buyer's booking is not found; a booking not paid online, or an
// event that does not allow it, or past its cutoff, is a conflict.
func (p *Payments) CancelMine(ctx context.Context, a Actor, booking uuid.UUID) (store.Booking, *store.Refund, error) {
	if a.Role != RoleBuyer {
		return store.Booking{}, nil, apperr.E(apperr.Forbidden, "staff cancel bookings at the box office")
	}
	b, err := p.e.store.Bookings.ByID(ctx, a.Org, a.User, booking)
	if err != nil {
		return store.Booking{}, nil, err
	}
	if b.PaymentID == uuid.Nil {
		return store.Booking{}, nil, apperr.E(apperr.Conflict, "only bookings paid online can be cancelled here; ask the box office")
	}
	ev, err := p.e.event(ctx, a.Org, b.EventID)
	if err != nil {
		return store.Booking{}, nil, err
	}
	st := ev.settings.Load()
	if st.BuyerCancelHours == nil {
		return store.Booking{}, nil, apperr.E(apperr.Conflict, "this event's bookings cannot be cancelled online; ask the organizer")
	}
	cutoff := st.StartsAt.Add(-time.Duration(*st.BuyerCancelHours) * time.Hour)
	if !p.e.now().Before(cutoff) {
		return store.Booking{}, nil, apperr.E(apperr.Conflict, "cancellations of this event closed at %s UTC",
			cutoff.UTC().Format("2006-01-02 15:04"))
	}
	return p.cancelBooking(ctx, a, booking, nil, "cancelled by the buyer")
}

// cancelBooking cancels tickets of a booking for a, and sends the refund
// of a booking paid online.
func (p *Payments) cancelBooking(ctx context.Context, a Actor, booking uuid.UUID, ticketIDs []uuid.UUID, reason string) (store.Booking, *store.Refund, error) {
	b, freed, refund, err := p.e.store.Payments.CancelBooking(context.WithoutCancel(ctx), a.Org, booking, a.User, ticketIDs, reason)
	if err != nil {
		return store.Booking{}, nil, err
	}
	p.e.commitCancel(ctx, a, b, freed)
	if refund == nil {
		return b, nil, nil
	}
	p.m.Refunds.WithLabelValues("requested").Inc()
	r := p.send(ctx, *refund)
	return b, &r, nil
}

// RetryRefund sends a failed refund again as a new attempt (or a refund
// still waiting for the provider's answer again with its key), for staff.
func (p *Payments) RetryRefund(ctx context.Context, a Actor, id uuid.UUID) (store.Refund, error) {
	if !a.Staff() {
		return store.Refund{}, apperr.E(apperr.Forbidden, "only box-office staff can retry refunds")
	}
	r, err := p.e.store.Payments.RetryRefund(ctx, a.Org, id)
	if err != nil {
		return store.Refund{}, err
	}
	p.m.Refunds.WithLabelValues("requested").Inc()
	return p.send(ctx, r), nil
}

// FailedRefunds lists the organization's failed refunds for staff: each
// is to be retried or settled with its buyer.
func (p *Payments) FailedRefunds(ctx context.Context, a Actor) ([]store.Refund, error) {
	if !a.Staff() {
		return nil, apperr.E(apperr.Forbidden, "only staff can see refunds")
	}
	return p.e.store.Payments.FailedRefunds(ctx, a.Org)
}

// send asks the provider for a refund with its idempotency key and applies
// the answer, and answers the refund as it then stands. A provider that
// does not answer leaves the refund requested, for the reconciler to send
// again with the same key; one that refuses it fails it, with its reason.
func (p *Payments) send(ctx context.Context, r store.Refund) store.Refund {
	reason := ""
	if r.Reason == store.RefundCancelled {
		reason = "requested_by_customer"
	}
	ans, err := p.prov.Refund(ctx, payment.RefundRequest{IntentID: r.IntentID, PaymentID: r.PaymentID.String(),
		OrgID: r.OrgID.String(), RefundID: r.ID.String(), AmountMinor: r.AmountMinor, Reason: reason,
		IdempotencyKey: r.IdempotencyKey})
	var rc *store.RefundChange
	switch code := apperr.CodeOf(err); {
	case err == nil:
		rc = refundChangeOf(ans)
		rc.RefundID = r.ID
	case code == apperr.ProviderUnavailable || code == apperr.Internal:
		p.e.log.Warn("refund not answered; the reconciler sends it again", "org", r.OrgID, "refund", r.ID, "err", err)
		return r
	default:
		msg := "the provider refused the refund"
		if e, ok := apperr.As(err); ok {
			msg = e.Message
		}
		p.e.log.Warn("refund refused by the provider", "org", r.OrgID, "refund", r.ID, "err", err)
		rc = &store.RefundChange{RefundID: r.ID, Status: store.RefundFailed, FailureReason: msg}
	}
	if _, err := p.apply(ctx, r.OrgID, r.PaymentID, store.PaymentChange{At: p.e.now(), Refund: rc}); err != nil {
		p.e.log.Error("apply a refund's answer", "org", r.OrgID, "refund", r.ID, "err", err)
		return r
	}
	if cur, err := p.e.store.Payments.Refund(ctx, r.OrgID, r.ID); err == nil {
		return cur
	}
	return r
}
