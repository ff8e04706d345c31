package hold

import (
	"context"

	"github.com/google/uuid"

	"seatd/internal/apperr"
)

// mustPay tells whether a buyer's purchase of holdIDs must go through a
// payment instead (Options.BuyersPay): when any of those active holds is
// of a seat that costs something. Free seats, staff, and holds that are
// not the buyer's active ones (a replayed purchase, holds that lapsed:
// the purchase answers those itself) pass.
func (h *Holds) mustPay(ctx context.Context, a Actor, event uuid.UUID, holdIDs []uuid.UUID) error {
	if !h.e.opt.BuyersPay || a.Role != RoleBuyer {
		return nil
	}
	ev, err := h.e.event(ctx, a.Org, event)
	if err != nil {
		return err
	}
	mine, err := h.e.store.Holds.OfUser(ctx, a.Org, event, a.User)
	if err != nil {
		return err
	}
	listed := make(map[uuid.UUID]bool, len(holdIDs))
	for _, id := range holdIDs {
		listed[id] = true
	}
	prices := map[string]int64{}
	for _, c := range ev.settings.Load().Categories {
		prices[c.Key] = c.PriceMinor
	}
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	for _, hd := range mine {
		if !listed[hd.ID] {
			continue
		}
		if st, ok := ev.lookup(hd.SeatID); ok && prices[st.Category] > 0 {
			return &apperr.Error{Code: apperr.PaymentRequired,
				Message: "these seats are paid for online: start a payment with POST /api/v1/events/" + event.String() + "/payments",
				Fields:  map[string]string{"payments": "/api/v1/events/" + event.String() + "/payments"}}
		}
	}
	return nil
}
