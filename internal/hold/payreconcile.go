package hold

// The reconciler: what the provider's webhooks did not say (a webhook
// lost, an endpoint down, a process stopped between a decision and the
// provider's answer) is asked of the provider and applied through the same
// path as a webhook.

import (
	"context"

	"seatd/internal/apperr"
	"seatd/internal/payment"
	"seatd/internal/store"
)

// Run reconciles every PaymentOptions.ReconcileEvery until ctx ends.
func (p *Payments) Run(ctx context.Context) {
	loop(ctx, p.opt.ReconcileEvery, nil, func(ctx context.Context) {
		if _, err := p.Reconcile(ctx); err != nil && ctx.Err() == nil {
			p.e.m.BackgroundErrors.WithLabelValues("payments").Inc()
			p.e.log.Error("payment reconciler", "err", err)
		}
	})
}

// Reconcile runs one round and returns how many payments and refunds it
// looked at. Payments not settled whose next check is due are claimed in
// due order (store.Payments.DuePayments: the due time is the cursor, and
// a claim moves it on, so processes share the work and one the provider
// keeps failing on goes to the back): each is asked about, and the answer
// applied; one still unpaid past its deadline is canceled at the
// provider. Refunds whose answer was never stored are sent again with
// their keys.
func (p *Payments) Reconcile(ctx context.Context) (int, error) {
	pays, err := p.e.store.Payments.DuePayments(ctx, p.opt.Provider, p.opt.ReconcileAfter, p.opt.Batch)
	if err != nil {
		return 0, err
	}
	for _, pay := range pays {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		p.check(ctx, pay)
	}
	refunds, err := p.e.store.Payments.DueRefunds(ctx, p.opt.Provider, p.opt.ReconcileAfter, p.opt.Batch)
	if err != nil {
		return len(pays), err
	}
	for _, r := range refunds {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		p.send(ctx, r)
	}
	return len(pays) + len(refunds), nil
}

// check asks the provider about one payment and applies the answer.
func (p *Payments) check(ctx context.Context, pay store.Payment) {
	now := p.e.now()
	if pay.IntentID == "" {
		// Begun, but its intent was never recorded: nobody was given a
		// way to pay it. Past its deadline it is canceled.
		if now.After(pay.Deadline) {
			p.result(pay, p.e.store.Payments.Expire(ctx, pay.OrgID, pay.ID), true)
		}
		return
	}
	in, err := p.prov.Retrieve(ctx, pay.IntentID)
	if err != nil {
		p.result(pay, err, false)
		return
	}
	if now.After(pay.Deadline) && (in.Status == payment.RequiresPayment || in.Status == payment.Failed) {
		// Unpaid past its deadline: its holds are gone, so nobody may pay
		// it any more (the answer may be that it was paid after all).
		p.result(pay, p.cancel(ctx, pay.OrgID, pay.ID, in.ID), true)
		return
	}
	res, err := p.apply(ctx, pay.OrgID, pay.ID, answerOf(in, now))
	p.result(pay, err, err == nil && res.Changed)
}

// result counts and logs a check's outcome.
func (p *Payments) result(pay store.Payment, err error, changed bool) {
	switch {
	case err != nil:
		p.m.Reconciled.WithLabelValues("error").Inc()
		level := p.e.log.Warn
		if apperr.CodeOf(err) == apperr.Internal {
			level = p.e.log.Error
		}
		level("payment reconciler: check failed; asked again later", "org", pay.OrgID, "payment", pay.ID, "err", err)
	case changed:
		p.m.Reconciled.WithLabelValues("changed").Inc()
		p.e.log.Info("payment reconciled", "org", pay.OrgID, "payment", pay.ID, "was", pay.Status)
	default:
		p.m.Reconciled.WithLabelValues("unchanged").Inc()
	}
}
