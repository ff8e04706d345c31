package payment

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"seatd/internal/apperr"
)

// SignatureHeader is the request header carrying a provider event's
// signature (Stripe's scheme, which the test provider uses too).
const SignatureHeader = "Stripe-Signature"

// MaxEventBytes bounds a webhook body: Stripe's events are a few KiB; the
// route reads no more than this before verifying.
const MaxEventBytes = 64 << 10

// EventType is a provider event's type, as Stripe names it.
type EventType string

// The event types seatd acts on. The endpoint on Stripe's dashboard
// subscribes to these (docs/payments.md); others are verified and ignored.
const (
	EventIntentSucceeded     EventType = "payment_intent.succeeded"
	EventIntentFailed        EventType = "payment_intent.payment_failed"
	EventIntentProcessing    EventType = "payment_intent.processing"
	EventIntentCanceled      EventType = "payment_intent.canceled"
	EventChargeRefunded      EventType = "charge.refunded"
	EventRefundCreated       EventType = "refund.created"
	EventRefundUpdated       EventType = "refund.updated"
	EventRefundFailed        EventType = "refund.failed"
	EventChargeRefundUpdated EventType = "charge.refund.updated"
)

// Event is one verified provider event, reduced to what the payment flow
// applies. Apply each ID once: providers deliver at least once, in any
// order.
type Event struct {
	ID      string
	Type    EventType
	Created time.Time
	// IntentID is the payment intent the event is about; "" for a type
	// seatd does not act on.
	IntentID  string
	PaymentID string // our payment id from the metadata, when present
	OrgID     string // the payment's organization from the metadata, when present
	// Status is the intent's status the event reports (payment_intent.*
	// events), "" for refund events.
	Status         Status
	AmountMinor    int64  // the intent's (or the charge's) amount
	Currency       string // lower case
	FailureMessage string // payment_failed: the decline's sentence, fit for the buyer
	// AmountRefunded is the charge's refunded total so far
	// (charge.refunded). Refund is the refund the event reports: always
	// for refund.* and charge.refund.updated; for charge.refunded only when
	// the charge lists its refunds (the test provider's do; Stripe's
	// current API versions leave the list out, so a flow that needs the
	// refund's id and status takes them from the refund.* events).
	AmountRefunded int64
	Refund         *Refund
}

// ErrSignature is in the chain of every refusal for a missing, malformed,
// wrong or stale signature (with apperr.BadRequest for the status).
var ErrSignature = errors.New("payment: webhook signature missing, wrong or stale")

// Verifier checks provider events against the endpoint's signing secret.
type Verifier struct {
	secret string
}

// NewVerifier returns a Verifier for the signing secret (Stripe's whsec_…,
// or the test provider's).
func NewVerifier(secret string) *Verifier { return &Verifier{secret: secret} }

// Verify checks header (the Stripe-Signature value) against payload with
// stripe-go and returns the event. The timestamp must lie within
// webhook.DefaultTolerance (5 minutes), which bounds replays; the flow's
// dedupe by event id covers the rest. Any refusal is apperr.BadRequest:
// the route answers 400 and changes nothing, and the provider retries.
func (v *Verifier) Verify(payload []byte, header string) (Event, error) {
	if v.secret == "" {
		return Event{}, errors.New("payment: no webhook signing secret configured")
	}
	se, err := webhook.ConstructEventWithOptions(payload, header, v.secret, webhook.ConstructEventOptions{
		// seatd reads a few fields that are the same in every API version
		// (ids, amounts, statuses, metadata); refusing events of an
		// endpoint set to another version would stall every payment.
		IgnoreAPIVersionMismatch: true,
	})
	if err != nil {
		if errors.Is(err, webhook.ErrNotSigned) || errors.Is(err, webhook.ErrInvalidHeader) ||
			errors.Is(err, webhook.ErrNoValidSignature) || errors.Is(err, webhook.ErrTooOld) {
			return Event{}, fmt.Errorf("%w: %w: %w", apperr.E(apperr.BadRequest, "webhook signature missing, wrong or too old"), ErrSignature, err)
		}
		return Event{}, fmt.Errorf("%w: %w", apperr.E(apperr.BadRequest, "webhook body is not an event"), err)
	}
	ev, err := eventOf(se)
	if err != nil {
		return Event{}, fmt.Errorf("%w: %w", apperr.E(apperr.BadRequest, "webhook event cannot be read"), err)
	}
	return ev, nil
}

// eventOf reads the object of a signed event with stripe-go's own types.
func eventOf(se stripe.Event) (Event, error) {
	ev := Event{ID: se.ID, Type: EventType(se.Type), Created: time.Unix(se.Created, 0)}
	if se.ID == "" {
		return Event{}, errors.New("event without id")
	}
	if se.Data == nil {
		return ev, nil
	}
	switch ev.Type {
	case EventIntentSucceeded, EventIntentFailed, EventIntentProcessing, EventIntentCanceled:
		var pi stripe.PaymentIntent
		if err := json.Unmarshal(se.Data.Raw, &pi); err != nil {
			return Event{}, fmt.Errorf("%s object: %w", ev.Type, err)
		}
		in := intentOf(&pi)
		ev.IntentID, ev.PaymentID, ev.OrgID, ev.AmountMinor, ev.Currency = in.ID, in.PaymentID, in.OrgID, in.AmountMinor, in.Currency
		// The type says what happened, whatever the object's status has
		// become since (a failed attempt's intent already reads
		// requires_payment_method again).
		ev.Status = map[EventType]Status{EventIntentSucceeded: Succeeded, EventIntentFailed: Failed,
			EventIntentProcessing: Processing, EventIntentCanceled: Canceled}[ev.Type]
		if pi.LastPaymentError != nil {
			ev.FailureMessage = pi.LastPaymentError.Msg
		}
	case EventChargeRefunded:
		var ch stripe.Charge
		if err := json.Unmarshal(se.Data.Raw, &ch); err != nil {
			return Event{}, fmt.Errorf("%s object: %w", ev.Type, err)
		}
		if ch.PaymentIntent != nil {
			ev.IntentID = ch.PaymentIntent.ID
		}
		ev.PaymentID, ev.OrgID = ch.Metadata[MetaPayment], ch.Metadata[MetaOrg]
		ev.AmountMinor, ev.Currency, ev.AmountRefunded = ch.Amount, string(ch.Currency), ch.AmountRefunded
		if ch.Refunds != nil {
			var latest *stripe.Refund
			for _, r := range ch.Refunds.Data {
				if latest == nil || r.Created > latest.Created {
					latest = r
				}
			}
			if latest != nil {
				r := refundOf(latest)
				if r.IntentID == "" {
					r.IntentID = ev.IntentID
				}
				ev.Refund = &r
			}
		}
	case EventRefundCreated, EventRefundUpdated, EventRefundFailed, EventChargeRefundUpdated:
		var rf stripe.Refund
		if err := json.Unmarshal(se.Data.Raw, &rf); err != nil {
			return Event{}, fmt.Errorf("%s object: %w", ev.Type, err)
		}
		r := refundOf(&rf)
		ev.Refund = &r
		ev.IntentID, ev.PaymentID, ev.OrgID, ev.AmountMinor, ev.Currency = r.IntentID, r.PaymentID, r.OrgID, r.AmountMinor, r.Currency
	}
	return ev, nil
}
