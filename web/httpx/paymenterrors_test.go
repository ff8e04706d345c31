package httpx

import (
	"net/http"
	"testing"

	"seatd/internal/apperr"
)

// TestPaymentErrorStatuses: a declined card is 402 and a payment provider
// that is down, slow or refuses our keys is 502 — the buyer's input is fine
// and nothing of ours failed; a buyer's direct purchase of seats that are
// paid for online is a conflict with the event's state (409).
func TestPaymentErrorStatuses(t *testing.T) {
	t.Parallel()
	for code, want := range map[apperr.Code]int{
		apperr.PaymentDeclined:     http.StatusPaymentRequired,
		apperr.ProviderUnavailable: http.StatusBadGateway,
		apperr.PaymentRequired:     http.StatusConflict,
	} {
		if got := Status(code); got != want {
			t.Errorf("%s answers %d, want %d", code, got, want)
		}
	}
}
