package hold

// A holder's holds once made: list them, release one, extend them at
// checkout, buy them.

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/seatlock"
	"seatd/internal/store"
)

// Release ends a hold: its holder may, and staff of the same org may
// release anyone's (with a reason for the audit log).
func (h *Holds) Release(ctx context.Context, a Actor, holdID uuid.UUID, reason string) (store.Hold, error) {
	hd, err := h.e.store.Holds.Release(context.WithoutCancel(ctx), a.Org, holdID, a.User, a.Staff(), reason)
	if err != nil {
		return store.Hold{}, err
	}
	h.e.m.Released.Inc()
	ev, err := h.e.event(ctx, a.Org, hd.EventID)
	if err != nil {
		return hd, nil // committed; the feed tells every process
	}
	h.e.dropLocks(ctx, ev, []seatlock.Released{{Seat: hd.SeatID, HoldID: hd.ID, Version: hd.SeatVersion}})
	h.e.commit(ctx, a.Org, hd.EventID, []Delta{holdDelta(hd, KindReleased, store.Available, store.Held, a.User, h.e.now())})
	if hd.Source == store.SourceWaitlist {
		// The offer's panels (every tab of its buyer) show it ended.
		h.e.publishWaitlist(ctx, a.Org, hd.EventID, WaitlistChange{Users: []uuid.UUID{hd.UserID}})
	}
	return hd, nil
}

// Checkout extends every active hold of the buyer for the event, once per
// hold (by the event's extension, else the default), and returns all
// their active holds with the new deadlines.
func (h *Holds) Checkout(ctx context.Context, a Actor, event uuid.UUID) ([]store.Hold, error) {
	ev, err := h.e.event(ctx, a.Org, event)
	if err != nil {
		return nil, err
	}
	changed, all, err := h.e.store.Holds.Extend(ctx, a.Org, event, a.User, h.extension(ev.settings.Load()), h.e.opt.MaxExtensions)
	if err != nil {
		return nil, err
	}
	if len(changed) == 0 {
		return all, nil
	}
	h.e.m.Extended.Add(float64(len(changed)))
	// Redis locks outlive their holds by a margin; the follower's sync
	// moves their expiry with the feed.
	now := h.e.now()
	ds := make([]Delta, len(changed))
	for i, hd := range changed {
		ds[i] = holdDelta(hd, KindExtended, store.Held, store.Held, a.User, now)
	}
	h.e.commit(ctx, a.Org, event, ds)
	return all, nil
}

// extension is how long a checkout extends a hold of the event.
func (h *Holds) extension(set *store.Event) time.Duration {
	if set.HoldExtension > 0 {
		return set.HoldExtension
	}
	return h.e.opt.Extension
}

// Extension is how long a checkout extends the actor's holds of an event
// (the tenancy gate applies).
func (h *Holds) Extension(ctx context.Context, a Actor, event uuid.UUID) (time.Duration, error) {
	ev, err := h.e.event(ctx, a.Org, event)
	if err != nil {
		return 0, err
	}
	return h.extension(ev.settings.Load()), nil
}

// Mine lists the actor's own active holds for an event.
func (h *Holds) Mine(ctx context.Context, a Actor, event uuid.UUID) ([]store.Hold, error) {
	if _, err := h.e.buyerEvent(ctx, a, event); err != nil {
		return nil, err
	}
	return h.e.store.Holds.OfUser(ctx, a.Org, event, a.User)
}

// EventHolds lists every active hold of an event (staff only).
func (h *Holds) EventHolds(ctx context.Context, a Actor, event uuid.UUID) ([]store.Hold, error) {
	if !a.Staff() {
		return nil, apperr.E(apperr.Forbidden, "only staff can list an event's holds")
	}
	if _, err := h.e.event(ctx, a.Org, event); err != nil {
		return nil, err
	}
	return h.e.store.Holds.OfEvent(ctx, a.Org, event)
}

// Purchase turns the buyer's listed holds into a booking. The key makes a
// retry return the same booking; a different payload under the same key is
// refused. With Options.BuyersPay a buyer's seats that cost something are
// refused with payment_required: they are bought through Payments.Start,
// and the provider's confirmation books them.
func (h *Holds) Purchase(ctx context.Context, a Actor, event uuid.UUID, key string, holdIDs []uuid.UUID) (store.Booking, error) {
	if err := checkConversion(key, holdIDs, h.e.opt.MaxHoldsPerBuyer); err != nil {
		return store.Booking{}, err
	}
	ev, err := h.e.event(ctx, a.Org, event)
	if err != nil {
		return store.Booking{}, err
	}
	b, err := h.e.store.Bookings.Purchase(context.WithoutCancel(ctx), a.Org, event, a.User, key, holdIDs, h.freeOnly(a))
	if errors.Is(err, store.ErrNotFree) {
		return store.Booking{}, paymentRequired(event)
	}
	if err != nil || b.Replayed {
		return b, err
	}
	h.e.commitSale(ctx, a.Org, ev.id, a, b)
	if b.Offer {
		// The offer's panels (every tab of its buyer) show it bought.
		h.e.publishWaitlist(ctx, a.Org, event, WaitlistChange{Users: []uuid.UUID{a.User}})
	}
	return b, nil
}

// checkConversion checks a purchase's or sale's key and hold list.
func checkConversion(key string, holdIDs []uuid.UUID, most int) error {
	if key == "" || len(key) > 200 {
		return &apperr.Error{Code: apperr.Invalid, Message: "an Idempotency-Key of 1 to 200 characters is required",
			Fields: map[string]string{"Idempotency-Key": "is required"}}
	}
	if len(holdIDs) == 0 || len(holdIDs) > most {
		return &apperr.Error{Code: apperr.Invalid, Message: "list the holds to buy",
			Fields: map[string]string{"hold_ids": "must list 1 to " + strconv.Itoa(most) + " holds"}}
	}
	seen := map[uuid.UUID]bool{}
	for _, id := range holdIDs {
		if seen[id] {
			return &apperr.Error{Code: apperr.Invalid, Message: "a hold is listed twice",
				Fields: map[string]string{"hold_ids": "must not repeat a hold"}}
		}
		seen[id] = true
	}
	return nil
}
