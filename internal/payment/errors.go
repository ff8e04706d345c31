package payment

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/stripe/stripe-go/v82"

	"seatd/internal/apperr"
)

// Messages a buyer or organizer may read; the provider's own text stays in
// the log (it is written for developers and may name internals), except a
// decline's, which Stripe writes for the card holder.
const (
	msgUnavailable = "the payment provider did not answer; please try again in a moment"
	msgRefused     = "the payment provider refused the request"
	msgDeclined    = "the card was declined"
)

// classify turns a provider failure into seatd's vocabulary, keeping the
// original in the chain for the log: errors.As finds both the *apperr.Error
// (for the status) and the *stripe.Error (for its request id).
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		// The caller went away; nobody reads an answer.
		return fmt.Errorf("payment %s: %w", op, err)
	}
	var se *stripe.Error
	if !errors.As(err, &se) {
		// No answer at all: refused connection, DNS, TLS, our timeout.
		return fmt.Errorf("payment %s: %w: %w", op, apperr.E(apperr.ProviderUnavailable, msgUnavailable), err)
	}
	return fmt.Errorf("payment %s: %w: %w", op, stripeCode(se), err)
}

// stripeCode is the seatd error for one Stripe error answer. The status
// decides first: an authentication failure is also an
// invalid_request_error, but it is our configuration that is wrong, not the
// buyer's input, and the buyer can do nothing but wait.
func stripeCode(se *stripe.Error) *apperr.Error {
	switch {
	case se.HTTPStatusCode == http.StatusUnauthorized, se.HTTPStatusCode == http.StatusForbidden,
		se.HTTPStatusCode == http.StatusTooManyRequests, se.HTTPStatusCode >= 500,
		se.Type == stripe.ErrorTypeAPI:
		return apperr.E(apperr.ProviderUnavailable, msgUnavailable)
	case se.Type == stripe.ErrorTypeCard:
		msg := se.Msg
		if msg == "" {
			msg = msgDeclined
		}
		return apperr.E(apperr.PaymentDeclined, "%s", msg)
	case se.Type == stripe.ErrorTypeIdempotency:
		return apperr.E(apperr.IdempotencyMismatch, "the idempotency key was used for another payment request")
	case se.HTTPStatusCode == http.StatusNotFound, se.Code == stripe.ErrorCodeResourceMissing:
		return apperr.E(apperr.NotFound, "the payment provider does not know this payment")
	case se.HTTPStatusCode == http.StatusConflict,
		se.Code == stripe.ErrorCodePaymentIntentUnexpectedState,
		se.Code == stripe.ErrorCodeChargeAlreadyRefunded:
		return apperr.E(apperr.Conflict, "the payment's state does not allow this change")
	default:
		e := &apperr.Error{Code: apperr.Invalid, Message: msgRefused}
		if se.Param != "" {
			e.Fields = map[string]string{se.Param: "refused by the payment provider"}
		}
		return e
	}
}
