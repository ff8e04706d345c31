package payment

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/stripe/stripe-go/v82"

	"seatd/internal/apperr"
)

// TestClassifyStripeMockRefusal: stripe-mock checks every request against
// Stripe's API description and refuses one without its required amount
// with 400 invalid_request_error, as Stripe would; classify makes it
// invalid (422), naming nothing of Stripe's developer message.
func TestClassifyStripeMockRefusal(t *testing.T) {
	t.Parallel()
	base := os.Getenv("SEATD_STRIPE_MOCK_URL")
	if base == "" {
		t.Fatal("SEATD_STRIPE_MOCK_URL is not set: run the tests with make test")
	}
	sc := stripe.NewClient("sk_test_seatd", stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL: stripe.String(base), LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull}})))
	_, err := sc.V1PaymentIntents.Create(context.Background(), &stripe.PaymentIntentCreateParams{Currency: stripe.String("eur")})
	var se *stripe.Error
	if !errors.As(err, &se) || se.HTTPStatusCode != http.StatusBadRequest {
		t.Fatalf("stripe-mock answered %v; want a 400 Stripe error", err)
	}
	got := classify("create", err)
	e, ok := apperr.As(got)
	if !ok || e.Code != apperr.Invalid || e.Message != msgRefused {
		t.Errorf("classified %v, want invalid with the generic message", got)
	}
	if !errors.As(got, &se) {
		t.Error("the Stripe error left the chain; the log needs its request id")
	}
}

// TestClassify: each kind of Stripe answer (as stripe-go decodes them) and
// each failure to get one maps to the code its caller can act on.
func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		code apperr.Code
	}{
		{"card declined", &stripe.Error{HTTPStatusCode: 402, Type: stripe.ErrorTypeCard, Code: stripe.ErrorCodeCardDeclined,
			DeclineCode: stripe.DeclineCodeInsufficientFunds, Msg: "Your card has insufficient funds."}, apperr.PaymentDeclined},
		{"invalid parameter", &stripe.Error{HTTPStatusCode: 400, Type: stripe.ErrorTypeInvalidRequest,
			Code: stripe.ErrorCodeAmountTooSmall, Param: "amount"}, apperr.Invalid},
		{"no such intent", &stripe.Error{HTTPStatusCode: 404, Type: stripe.ErrorTypeInvalidRequest,
			Code: stripe.ErrorCodeResourceMissing}, apperr.NotFound},
		{"already succeeded", &stripe.Error{HTTPStatusCode: 400, Type: stripe.ErrorTypeInvalidRequest,
			Code: stripe.ErrorCodePaymentIntentUnexpectedState}, apperr.Conflict},
		{"already refunded", &stripe.Error{HTTPStatusCode: 400, Type: stripe.ErrorTypeInvalidRequest,
			Code: stripe.ErrorCodeChargeAlreadyRefunded}, apperr.Conflict},
		{"key reused", &stripe.Error{HTTPStatusCode: 400, Type: stripe.ErrorTypeIdempotency}, apperr.IdempotencyMismatch},
		{"bad secret key", &stripe.Error{HTTPStatusCode: 401, Type: stripe.ErrorTypeInvalidRequest}, apperr.ProviderUnavailable},
		{"rate limited", &stripe.Error{HTTPStatusCode: 429, Type: stripe.ErrorTypeInvalidRequest, Code: stripe.ErrorCodeRateLimit}, apperr.ProviderUnavailable},
		{"Stripe down", &stripe.Error{HTTPStatusCode: 503, Type: stripe.ErrorTypeAPI}, apperr.ProviderUnavailable},
		{"no answer", fmt.Errorf("dial tcp: %w", errors.New("connection refused")), apperr.ProviderUnavailable},
		{"our timeout", context.DeadlineExceeded, apperr.ProviderUnavailable},
		{"caller gone", context.Canceled, apperr.Internal},
	} {
		got := classify("op", tc.err)
		if c := apperr.CodeOf(got); c != tc.code {
			t.Errorf("%s: %s (%v), want %s", tc.name, c, got, tc.code)
		}
		if !errors.Is(got, tc.err) {
			t.Errorf("%s: the provider's error left the chain", tc.name)
		}
	}
	// A decline's sentence is Stripe's, written for the card holder.
	e, _ := apperr.As(classify("op", &stripe.Error{Type: stripe.ErrorTypeCard, Msg: "Your card has expired."}))
	if e == nil || e.Message != "Your card has expired." {
		t.Errorf("decline message %v", e)
	}
}
