package hold

// Payments: a buyer pays for their holds through the payment provider, and
// the provider's confirmation alone makes the booking
// (docs/architecture.md#payments, docs/payments.md). The calls the web
// layer makes are listed in the package comment (doc.go). Reading on:
// payapply.go (the provider's events and answers: the one path that books),
// payrefund.go, payreconcile.go, payreport.go.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/payment"
	"seatd/internal/store"
	"seatd/internal/telemetry"
)

// MaxPaymentTTL caps PaymentOptions.TTL: a payment keeps its seats from
// everyone else until its deadline, so it must not keep them for long.
const MaxPaymentTTL = time.Hour

// PaymentOptions are the payment flow's settings.
type PaymentOptions struct {
	// Provider names the provider payments are made with
	// (store.ProviderStripe or store.ProviderTest).
	Provider string
	// TTL is how long a buyer has to pay once they start: the payment's
	// deadline, until which its holds are kept (at most MaxPaymentTTL).
	TTL time.Duration
	// ReconcileAfter is how long a payment goes without news before the
	// reconciler asks the provider about it (and again after as long,
	// until it is settled); ReconcileEvery how often the reconciler looks.
	ReconcileAfter, ReconcileEvery time.Duration
	// Batch is how many payments (and refunds) a reconciler round claims
	// at most.
	Batch int
	// SeatsTakenMail writes the buyer's mail when a payment is refunded
	// in full because its seats were taken after its holds lapsed (nil:
	// no mail).
	SeatsTakenMail store.SeatsTakenMail
}

// Payments takes buyers' payments for their holds, makes their bookings
// from the provider's confirmations, refunds cancelled paid tickets, and
// reconciles what the provider's webhooks did not say.
type Payments struct {
	e      *Engine
	prov   payment.Provider
	verify *payment.Verifier
	opt    PaymentOptions
	m      *telemetry.Payments
}

// NewPayments builds the payment flow on the engine, with the provider,
// the verifier of its webhooks and the metrics.
func NewPayments(e *Engine, prov payment.Provider, v *payment.Verifier, o PaymentOptions, m *telemetry.Payments) *Payments {
	switch {
	case o.TTL <= 0:
		o.TTL = 15 * time.Minute
	case o.TTL > MaxPaymentTTL:
		o.TTL = MaxPaymentTTL
	}
	if o.ReconcileAfter <= 0 {
		o.ReconcileAfter = 3 * time.Minute
	}
	if o.ReconcileEvery <= 0 {
		o.ReconcileEvery = 30 * time.Second
	}
	if o.Batch <= 0 {
		o.Batch = 100
	}
	return &Payments{e: e, prov: prov, verify: v, opt: o, m: m}
}

// Started is a payment as Start answers it: with the client secret the
// buyer's page confirms it with (Stripe's Payment Element, or the test
// provider's card form). Hand the secret to the payment's buyer only.
type Started struct {
	Payment      store.Payment
	ClientSecret string // "" when the payment cannot be paid any more
}

// Start begins the buyer's payment for their active holds of an event, or
// answers the payment the key began before. The amount is the seats'
// prices now, in the event's currency; the provider's intent is made with
// an idempotency key derived from the payment, and only then are the holds
// marked as being paid and kept until the payment's deadline. The buyer's
// earlier payment of the same holds, not paid yet, is canceled. A provider
// that fails leaves nothing behind and the holds as they were: its error
// (provider_unavailable, 502) says to try again.
func (p *Payments) Start(ctx context.Context, a Actor, event uuid.UUID, key string) (Started, error) {
	if err := canHold(a); err != nil {
		return Started{}, err
	}
	if key == "" || len(key) > 200 {
		return Started{}, &apperr.Error{Code: apperr.Invalid, Message: "an Idempotency-Key of 1 to 200 characters is required",
			Fields: map[string]string{"Idempotency-Key": "is required"}}
	}
	ev, err := p.e.buyerEvent(ctx, a, event)
	if err != nil {
		return Started{}, err
	}
	now := p.e.now()
	pay, err := p.e.store.Payments.Begin(ctx, store.NewPayment{Org: a.Org, Event: event, User: a.User, Key: key,
		Provider: p.opt.Provider, Deadline: now.Add(p.opt.TTL), CheckAt: now.Add(p.opt.ReconcileAfter)})
	if err != nil {
		return Started{}, err
	}
	if pay.Replayed && (pay.IntentID != "" || !pay.Status.Live()) {
		return p.started(ctx, pay)
	}
	in, err := p.prov.Create(ctx, payment.CreateRequest{PaymentID: pay.ID.String(), OrgID: a.Org.String(), EventID: event.String(),
		AmountMinor: pay.AmountMinor, Currency: pay.Currency, Description: describe(pay, ev.settings.Load().Name),
		IdempotencyKey: intentKey(pay.ID)})
	if err != nil {
		p.m.Outcomes.WithLabelValues("provider_error").Inc()
		if !pay.Replayed {
			// Nothing was marked: the buyer's retry begins afresh.
			if derr := p.e.store.Payments.Drop(context.WithoutCancel(ctx), a.Org, pay.ID); derr != nil {
				p.e.log.Warn("drop a payment the provider did not make", "org", a.Org, "payment", pay.ID, "err", derr)
			}
		}
		return Started{}, fmt.Errorf("payment %s: %w", pay.ID, err)
	}
	marked, err := p.e.store.Payments.Mark(context.WithoutCancel(ctx), a.Org, pay.ID, in.ID)
	if err != nil {
		// The holds lapsed, or another payment of them is processing:
		// this intent must not be paid (a cancel that fails is logged;
		// the reconciler cancels it past its deadline).
		_ = p.cancel(context.WithoutCancel(ctx), a.Org, pay.ID, in.ID)
		return Started{}, err
	}
	p.m.Outcomes.WithLabelValues("started").Inc()
	if len(marked.Extended) > 0 {
		ds := make([]Delta, len(marked.Extended))
		for i, h := range marked.Extended {
			ds[i] = holdDelta(h, KindExtended, store.Held, store.Held, a.User, now)
		}
		p.e.commit(ctx, a.Org, event, ds)
	}
	for _, old := range marked.Superseded {
		// Logged when it fails; the reconciler cancels it past its
		// deadline, and its success, if the buyer paid it after all,
		// sells what it still can and refunds otherwise.
		_ = p.cancel(context.WithoutCancel(ctx), old.OrgID, old.ID, old.IntentID)
	}
	// Mark changed nothing else of the payment (its holds are the same).
	pay.IntentID, pay.UpdatedAt = in.ID, marked.UpdatedAt
	return Started{Payment: pay, ClientSecret: in.ClientSecret}, nil
}

// started answers a payment begun before, with its secret while it can
// be paid.
func (p *Payments) started(ctx context.Context, pay store.Payment) (Started, error) {
	out := Started{Payment: pay}
	if pay.IntentID == "" || !pay.Status.Live() {
		return out, nil
	}
	in, err := p.prov.Retrieve(ctx, pay.IntentID)
	if err != nil {
		return Started{}, fmt.Errorf("payment %s: %w", pay.ID, err)
	}
	out.ClientSecret = in.ClientSecret
	return out, nil
}

// intentKey is the provider's idempotency key for a payment's intent:
// unique across the provider account (the buyer's key is unique per buyer
// only).
func intentKey(id uuid.UUID) string { return "seatd_pay_" + id.String() }

// describe is what the provider shows for the payment.
func describe(pay store.Payment, event string) string {
	n := len(pay.Holds)
	s := fmt.Sprintf("%d seats, %s", n, event)
	if n == 1 {
		s = "1 seat, " + event
	}
	return strings.TrimSpace(s)
}

// ClientSecret answers the secret of the buyer's own payment while it can
// be paid (the page was reloaded): only the payment's buyer gets it.
func (p *Payments) ClientSecret(ctx context.Context, a Actor, id uuid.UUID) (string, error) {
	pay, err := p.e.store.Payments.Get(ctx, a.Org, a.User, id)
	if err != nil {
		return "", err
	}
	return p.SecretOf(ctx, a, pay)
}

// SecretOf is ClientSecret for a payment the caller has read already (the
// payment page, which reads it anyway): only its buyer gets the secret;
// anyone else is answered as if there were no such payment.
func (p *Payments) SecretOf(ctx context.Context, a Actor, pay store.Payment) (string, error) {
	if pay.OrgID != a.Org || pay.UserID != a.User || a.User == uuid.Nil {
		return "", apperr.E(apperr.NotFound, "payment not found")
	}
	if !pay.Status.Live() || pay.IntentID == "" {
		return "", apperr.E(apperr.Conflict, "this payment is %s: there is nothing to pay", pay.Status)
	}
	st, err := p.started(ctx, pay)
	return st.ClientSecret, err
}

// Abandon cancels the buyer's own payment that is not paid: the intent is
// canceled at the provider and the holds are the buyer's again as before
// (until their time). A payment the provider says was paid meanwhile is
// applied as paid instead.
func (p *Payments) Abandon(ctx context.Context, a Actor, id uuid.UUID) (store.Payment, error) {
	pay, err := p.e.store.Payments.Get(ctx, a.Org, a.User, id)
	if err != nil {
		return store.Payment{}, err
	}
	if !pay.Status.Live() {
		return store.Payment{}, apperr.E(apperr.Conflict, "this payment is %s: it cannot be canceled", pay.Status)
	}
	if pay.IntentID == "" {
		if err := p.e.store.Payments.Expire(ctx, a.Org, id); err != nil {
			return store.Payment{}, err
		}
	} else if err := p.cancel(ctx, a.Org, id, pay.IntentID); err != nil {
		return store.Payment{}, err
	}
	return p.e.store.Payments.Get(ctx, a.Org, a.User, id)
}

// cancel cancels a payment's intent at the provider and applies the
// answer; an intent that cannot be canceled any more (paid meanwhile) is
// asked about and applied as it is.
func (p *Payments) cancel(ctx context.Context, org, id uuid.UUID, intent string) error {
	in, err := p.prov.Cancel(ctx, intent)
	if apperr.CodeOf(err) == apperr.Conflict {
		in, err = p.prov.Retrieve(ctx, intent)
	}
	if err != nil {
		p.e.log.Warn("cancel a payment's intent", "org", org, "payment", id, "err", err)
		return fmt.Errorf("payment %s: %w", id, err)
	}
	_, err = p.apply(ctx, org, id, answerOf(in, p.e.now()))
	return err
}

// Get returns a payment: staff may read any of their organization's, a
// buyer only their own.
func (p *Payments) Get(ctx context.Context, a Actor, id uuid.UUID) (store.Payment, error) {
	user := a.User
	if a.Staff() {
		user = uuid.Nil
	}
	return p.e.store.Payments.Get(ctx, a.Org, user, id)
}

// Mine lists the buyer's own payments for an event, newest first.
func (p *Payments) Mine(ctx context.Context, a Actor, event uuid.UUID) ([]store.Payment, error) {
	if _, err := p.e.buyerEvent(ctx, a, event); err != nil {
		return nil, err
	}
	return p.e.store.Payments.List(ctx, a.Org, store.PaymentFilter{Event: event, User: a.User})
}

// List lists an event's payments for staff, newest first (f.Event must be
// set; f.Before pages back).
func (p *Payments) List(ctx context.Context, a Actor, f store.PaymentFilter) ([]store.Payment, error) {
	if !a.Staff() {
		return nil, apperr.E(apperr.Forbidden, "only staff can list an event's payments")
	}
	if _, err := p.e.event(ctx, a.Org, f.Event); err != nil {
		return nil, err
	}
	return p.e.store.Payments.List(ctx, a.Org, f)
}

// errUnknownPayment: a provider event names no payment of seatd's.
var errUnknownPayment = errors.New("no payment of seatd's")
