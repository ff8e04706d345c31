// Package payment talks to the payment provider: Stripe through stripe-go
// (PaymentIntents, refunds, signed webhooks), or the embedded test provider
// that stands in for it when no Stripe keys are set and confirms through the
// same signed webhook path. The payment flow calls the Provider interface
// and reads provider events through Verifier; it never sees a Stripe type.
package payment

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"seatd/internal/apperr"
)

// Provider is what the payment flow asks of a payment provider. Every
// method is safe for concurrent use. Errors carry an apperr code (see
// errors.go): PaymentDeclined, ProviderUnavailable, Invalid, NotFound,
// Conflict, IdempotencyMismatch; anything else is ours (Internal).
type Provider interface {
	// Create makes a PaymentIntent for req. A repeat with the same
	// IdempotencyKey answers the first intent.
	Create(ctx context.Context, req CreateRequest) (Intent, error)
	// Retrieve answers an intent's current state (the reconciler's
	// question when a webhook seems lost).
	Retrieve(ctx context.Context, intentID string) (Intent, error)
	// Cancel abandons an intent that has not succeeded (Conflict when it
	// has, or was canceled already).
	Cancel(ctx context.Context, intentID string) (Intent, error)
	// Refund returns money of a succeeded intent, whole or in part. A
	// repeat with the same IdempotencyKey answers the first refund.
	Refund(ctx context.Context, req RefundRequest) (Refund, error)
}

// Status is a payment intent's state in seatd's words.
type Status string

// The intent statuses. Stripe's requires_payment_method,
// requires_confirmation and requires_action are all RequiresPayment: the
// buyer still has something to do.
const (
	RequiresPayment Status = "requires_payment"
	Processing      Status = "processing"
	Succeeded       Status = "succeeded"
	Failed          Status = "failed" // the last attempt was declined; the buyer may try again
	Canceled        Status = "canceled"
)

// RefundStatus is a refund's state in seatd's words.
type RefundStatus string

// The refund statuses (Stripe's requires_action is RefundPending).
const (
	RefundPending   RefundStatus = "pending"
	RefundSucceeded RefundStatus = "succeeded"
	RefundFailed    RefundStatus = "failed"
	RefundCanceled  RefundStatus = "canceled"
)

// Metadata keys seatd writes on every intent (and refund), so that an event
// can be tied to its payment even before the flow has stored the intent id.
const (
	MetaPayment = "seatd_payment_id"
	MetaOrg     = "seatd_org_id"
	MetaEvent   = "seatd_event_id"
	// MetaRefund names seatd's refund on a refund, so its events find it
	// even before the provider's answer to the request was stored.
	MetaRefund = "seatd_refund_id"
)

// CreateRequest describes one PaymentIntent.
type CreateRequest struct {
	PaymentID   string // seatd's payment id (metadata)
	OrgID       string // the organization selling (metadata)
	EventID     string // the event the seats belong to (metadata)
	AmountMinor int64  // integer minor units of Currency (cents)
	Currency    string // ISO 4217, any case ("EUR")
	Description string // what the buyer sees on the provider's side
	// IdempotencyKey is sent to the provider as its Idempotency-Key. It must
	// be unique across the whole provider account, not only per buyer: two
	// buyers may send the same header, so the flow derives it from its
	// payment (which the buyer's key already names), e.g. "pay_<id>".
	IdempotencyKey string
}

// RefundRequest describes one refund.
type RefundRequest struct {
	IntentID       string
	PaymentID      string // seatd's payment id (metadata)
	OrgID          string // the organization whose payment it is (metadata)
	RefundID       string // seatd's refund id (metadata)
	AmountMinor    int64  // 0: whatever is left to refund
	Reason         string // "" or one of Stripe's: requested_by_customer, duplicate, fraudulent
	IdempotencyKey string // unique across the provider account, as for CreateRequest
}

// Intent is a PaymentIntent as seatd needs it.
type Intent struct {
	ID          string
	Status      Status
	AmountMinor int64
	Currency    string // lower case, as providers answer it
	// ClientSecret lets the buyer's page confirm this intent (Stripe's
	// Payment Element, or the test provider's card form). Hand it only to
	// the buyer who owns the payment.
	ClientSecret string
	PaymentID    string // from the metadata; "" when the intent has none
	OrgID        string // from the metadata; "" when the intent has none
	// FailureMessage is the provider's sentence for the last declined
	// attempt, fit for the buyer (Failed only).
	FailureMessage string
	Created        time.Time
}

// Refund is a refund as seatd needs it.
type Refund struct {
	ID          string
	IntentID    string
	Status      RefundStatus
	AmountMinor int64
	Currency    string
	PaymentID   string // from the metadata; "" when the refund has none
	OrgID       string // from the metadata; "" when the refund has none
	RefundID    string // seatd's refund, from the metadata; "" when none
	// FailureReason is the provider's word for a failed refund
	// (Stripe's failure_reason: expired_or_canceled_card, ...).
	FailureReason string
}

// currencyRE is an ISO 4217 code; the amount's unit depends on it, so a
// malformed one is refused before anything is charged.
var currencyRE = regexp.MustCompile(`^[A-Za-z]{3}$`)

// idempotencyKeyMax is Stripe's limit.
const idempotencyKeyMax = 255

// check reports what is wrong with req before any provider sees it.
func (req CreateRequest) check() error {
	fields := map[string]string{}
	if req.AmountMinor <= 0 {
		fields["amount_minor"] = "must be a positive number of minor units"
	}
	if !currencyRE.MatchString(req.Currency) {
		fields["currency"] = "must be a three-letter ISO 4217 code"
	}
	if len(fields) > 0 {
		return &apperr.Error{Code: apperr.Invalid, Message: "the payment cannot be created", Fields: fields}
	}
	return checkKey(req.IdempotencyKey)
}

func (req RefundRequest) check() error {
	if req.IntentID == "" {
		return fmt.Errorf("payment: refund without an intent id")
	}
	if req.AmountMinor < 0 {
		return &apperr.Error{Code: apperr.Invalid, Message: "the refund cannot be made",
			Fields: map[string]string{"amount_minor": "must not be negative"}}
	}
	return checkKey(req.IdempotencyKey)
}

// checkKey: a missing key is a bug of the caller (a retried request would
// charge or refund twice), so it is an internal error, not the buyer's.
func checkKey(key string) error {
	if key == "" || len(key) > idempotencyKeyMax {
		return fmt.Errorf("payment: idempotency key must be 1 to %d characters, got %d", idempotencyKeyMax, len(key))
	}
	return nil
}
