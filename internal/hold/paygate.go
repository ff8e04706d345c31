package hold

import (
	"github.com/google/uuid"

	"seatd/internal/apperr"
)

// freeOnly tells whether a's purchases may book only seats that cost
// nothing (Options.BuyersPay): a buyer's priced seats are bought through
// a payment instead. Staff sales are not asked. The purchase decides it
// from the prices its tickets are written at (store.Bookings.Purchase),
// so a replayed purchase, or holds that lapsed, answer as they would
// without it.
func (h *Holds) freeOnly(a Actor) bool {
	return h.e.opt.BuyersPay && a.Role == RoleBuyer
}

// paymentRequired refuses a buyer's direct purchase of priced seats and
// points to the payments route.
func paymentRequired(event uuid.UUID) error {
	return &apperr.Error{Code: apperr.PaymentRequired,
		Message: "these seats are paid for online: start a payment with POST /api/v1/events/" + event.String() + "/payments",
		Fields:  map[string]string{"payments": "/api/v1/events/" + event.String() + "/payments"}}
}
