package hold

// The box office's use cases beside holds for a customer (Holds.Hold with
// Request.Customer): sales at the counter, booking look-ups,
// cancellations and house seats. They go through the same commits and
// feed as a buyer's holds (docs/architecture.md#box-office-and-bookings).

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// BoxOffice sells at the counter, finds and cancels bookings, and keeps
// house seats.
type BoxOffice struct {
	e *Engine
}

// NewBoxOffice builds the box office's job on the engine.
func NewBoxOffice(e *Engine) *BoxOffice { return &BoxOffice{e: e} }

// Sell turns customer holds into a booking paid at the counter (cash,
// card or comp). The key makes a retry return the same booking, exactly
// as for a buyer's purchase (store.Bookings.Sell shares its transaction).
func (o *BoxOffice) Sell(ctx context.Context, a Actor, event uuid.UUID, key string, holdIDs []uuid.UUID, payment string) (store.Booking, error) {
	if !a.Staff() {
		return store.Booking{}, apperr.E(apperr.Forbidden, "only box-office staff can sell at the counter")
	}
	if !slices.Contains(store.PaymentMethods, payment) {
		return store.Booking{}, &apperr.Error{Code: apperr.Invalid, Message: "payment_method must be cash, card or comp",
			Fields: map[string]string{"payment_method": "must be one of cash, card, comp"}}
	}
	if err := checkConversion(key, holdIDs, o.e.opt.MaxSeatsPerRequest); err != nil {
		return store.Booking{}, err
	}
	ev, err := o.e.event(ctx, a.Org, event)
	if err != nil {
		return store.Booking{}, err
	}
	b, err := o.e.store.Bookings.Sell(context.WithoutCancel(ctx), a.Org, event, a.User, key, holdIDs, payment)
	if err != nil || b.Replayed {
		return b, err
	}
	o.e.commitSale(ctx, a.Org, ev.id, a, b)
	return b, nil
}

// Booking returns a booking: staff may read any of their organization's,
// a buyer only their own.
func (o *BoxOffice) Booking(ctx context.Context, a Actor, id uuid.UUID) (store.Booking, error) {
	user := a.User
	if a.Staff() {
		user = uuid.Nil
	}
	return o.e.store.Bookings.ByID(ctx, a.Org, user, id)
}

// FindBookings finds bookings by reference or email (staff only).
func (o *BoxOffice) FindBookings(ctx context.Context, a Actor, query string) ([]store.Booking, error) {
	if !a.Staff() {
		return nil, apperr.E(apperr.Forbidden, "only staff can look up bookings")
	}
	return o.e.store.Bookings.Find(ctx, a.Org, query)
}

// Cancel cancels some tickets of a booking (all when none are listed),
// with a reason for the audit log. The seats are available again at once:
// the change commits with one booking.cancelled audit row per seat, which
// the feed carries to every process and to Redis; this process publishes
// it as it does a release. A booking paid online is cancelled with its
// refund (Payments.Cancel), and refused here.
func (o *BoxOffice) Cancel(ctx context.Context, a Actor, booking uuid.UUID, ticketIDs []uuid.UUID, reason string) (store.Booking, error) {
	if !a.Staff() {
		return store.Booking{}, apperr.E(apperr.Forbidden, "only box-office staff can cancel bookings")
	}
	reason, err := cancelReason(reason)
	if err != nil {
		return store.Booking{}, err
	}
	b, freed, err := o.e.store.Bookings.Cancel(context.WithoutCancel(ctx), a.Org, booking, a.User, ticketIDs, reason)
	if err != nil {
		return store.Booking{}, err
	}
	o.e.commitCancel(ctx, a, b, freed)
	return b, nil
}

// cancelReason checks (and trims) the reason a cancellation gives.
func cancelReason(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" || utf8.RuneCountInString(reason) > 500 {
		return "", &apperr.Error{Code: apperr.Invalid, Message: "give a reason for cancelling; it is kept in the audit log",
			Fields: map[string]string{"reason": "must be 1 to 500 characters"}}
	}
	return reason, nil
}

// commitCancel publishes the seats a cancellation freed.
func (e *Engine) commitCancel(ctx context.Context, a Actor, b store.Booking, freed []store.SoldSeat) {
	e.m.Cancelled.Add(float64(len(freed)))
	now := e.now()
	ds := make([]Delta, len(freed))
	for i, x := range freed {
		ds[i] = Delta{Org: a.Org, Event: b.EventID, Seat: x.SeatID, Kind: KindCancelled, Status: store.Available,
			Prev: store.Sold, Version: x.Version, Actor: a.User, PrevUser: b.UserID, At: now}
	}
	e.commit(ctx, a.Org, b.EventID, ds)
}

// HouseSeats lists an event's house seats (staff only).
func (o *BoxOffice) HouseSeats(ctx context.Context, a Actor, event uuid.UUID) ([]store.HouseAllocation, error) {
	if !a.Staff() {
		return nil, apperr.E(apperr.Forbidden, "only staff can see house seats")
	}
	if _, err := o.e.event(ctx, a.Org, event); err != nil {
		return nil, err
	}
	return o.e.store.Bookings.HouseSeats(ctx, a.Org, event)
}

// CreateHouseSeats names a set of blocked seats kept back from sale.
func (o *BoxOffice) CreateHouseSeats(ctx context.Context, a Actor, event uuid.UUID, name string, seatIDs []uuid.UUID) (store.HouseAllocation, error) {
	if !a.Staff() {
		return store.HouseAllocation{}, apperr.E(apperr.Forbidden, "only staff can keep house seats")
	}
	name = strings.TrimSpace(name)
	fields := map[string]string{}
	if n := utf8.RuneCountInString(name); n == 0 || n > 100 || !utf8.ValidString(name) {
		fields["name"] = "must be 1 to 100 characters"
	}
	if len(seatIDs) == 0 || len(seatIDs) > 1000 {
		fields["seat_ids"] = "must list 1 to 1000 blocked seats"
	}
	if len(fields) > 0 {
		return store.HouseAllocation{}, &apperr.Error{Code: apperr.Invalid, Message: "name the house seats and list their blocked seats", Fields: fields}
	}
	if _, err := o.e.event(ctx, a.Org, event); err != nil {
		return store.HouseAllocation{}, err
	}
	return o.e.store.Bookings.CreateHouseSeats(ctx, a.Org, event, a.User, name, seatIDs)
}

// ReleaseHouseSeats puts every seat of an allocation on sale in one
// transaction, published like an unblock.
func (o *BoxOffice) ReleaseHouseSeats(ctx context.Context, a Actor, id uuid.UUID) (store.HouseAllocation, error) {
	if !a.Staff() {
		return store.HouseAllocation{}, apperr.E(apperr.Forbidden, "only staff can release house seats")
	}
	h, freed, err := o.e.store.Bookings.ReleaseHouseSeats(context.WithoutCancel(ctx), a.Org, id, a.User)
	if err != nil {
		return store.HouseAllocation{}, err
	}
	now := o.e.now()
	ds := make([]Delta, len(freed))
	for i, x := range freed {
		ds[i] = Delta{Org: a.Org, Event: h.EventID, Seat: x.SeatID, Kind: KindUnblocked, Status: store.Available,
			Prev: store.Blocked, Version: x.Version, Actor: a.User, At: now}
	}
	o.e.commit(ctx, a.Org, h.EventID, ds)
	return h, nil
}
