package hold

import (
	"context"
	"net/mail"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// The box office's use cases: holds for a named customer, sales at the
// counter, cancellations, booking look-ups and house seats. They go
// through the same tiers, commits and feed as a buyer's holds.

// MaxCustomerHold is how far ahead a customer's hold may run.
const MaxCustomerHold = 14 * 24 * time.Hour

// HoldFor holds seats for a named customer until the time staff chose
// (up to MaxCustomerHold ahead), all or none. Such holds are never reaped
// before their time; staff holding a seat again for the same customer get
// the same hold back.
func (s *Service) HoldFor(ctx context.Context, a Actor, event uuid.UUID, seatIDs []uuid.UUID, c store.Customer, until time.Time) (Result, error) {
	o, err := s.customerHold(a, c, until)
	if err != nil {
		return Result{}, err
	}
	return s.observedHold(ctx, a, event, seatIDs, SourceBoxOffice, o)
}

// customerHold checks a hold for a named customer: staff only, a valid
// customer, until at least a minute and at most MaxCustomerHold ahead.
func (s *Service) customerHold(a Actor, c store.Customer, until time.Time) (holdOpts, error) {
	if !a.Staff() {
		return holdOpts{}, apperr.E(apperr.Forbidden, "only box-office staff can hold seats for a customer")
	}
	c, err := checkCustomer(c)
	if err != nil {
		return holdOpts{}, err
	}
	now := s.now()
	switch {
	case !until.After(now.Add(time.Minute)):
		return holdOpts{}, &apperr.Error{Code: apperr.Invalid, Message: "a customer's hold must last at least a minute",
			Fields: map[string]string{"held_until": "must be in the future"}}
	case until.After(now.Add(MaxCustomerHold)):
		return holdOpts{}, &apperr.Error{Code: apperr.Invalid, Message: "a customer's hold can last at most 14 days",
			Fields: map[string]string{"held_until": "must be at most 14 days ahead"}}
	}
	return holdOpts{customer: &c, until: until}, nil
}

// HoldBestFor holds the best Count seats for a named customer until the
// time staff chose: the seats best available picks for a buyer (so no
// seat is left alone under the strict orphan rule, and accessible seats
// held back stay back unless b.Accessible), held as HoldFor holds them.
// Staff ask one at a time, so unlike HoldBest it takes the best block
// rather than spreading a crowd, and moves on to the next when another
// buyer takes it first (pickAndHold, as HoldBest does).
func (s *Service) HoldBestFor(ctx context.Context, a Actor, event uuid.UUID, b Best, c store.Customer, until time.Time) (Result, error) {
	o, err := s.customerHold(a, c, until)
	if err != nil {
		return Result{}, err
	}
	o.fresh = true
	ev, err := s.bestEvent(ctx, a, event, b)
	if err != nil {
		return Result{}, err
	}
	// bestBlocks lifts the orphan rule and the accessible hold-back for
	// staff, who may place any seat by hand; seats chosen for them are
	// chosen by the buyer's rules.
	chooser := a
	chooser.Role = RoleBuyer
	return s.pickAndHold(ev, chooser, b, 1, func(pick []uuid.UUID) (Result, error) {
		return s.observedHold(ctx, a, event, pick, SourceBoxOffice, o)
	})
}

// checkCustomer validates and normalizes a customer (email lower case).
func checkCustomer(c store.Customer) (store.Customer, error) {
	c.Name, c.Email, c.Note = strings.TrimSpace(c.Name), strings.ToLower(strings.TrimSpace(c.Email)), strings.TrimSpace(c.Note)
	fields := map[string]string{}
	if n := utf8.RuneCountInString(c.Name); n == 0 || n > 200 || !utf8.ValidString(c.Name) {
		fields["customer.name"] = "must be 1 to 200 characters"
	}
	if addr, err := mail.ParseAddress(c.Email); err != nil || addr.Address != c.Email || len(c.Email) > 254 {
		fields["customer.email"] = "must be an email address"
	}
	if utf8.RuneCountInString(c.Note) > 1000 || !utf8.ValidString(c.Note) {
		fields["customer.note"] = "must be at most 1000 characters"
	}
	if len(fields) > 0 {
		return c, &apperr.Error{Code: apperr.Invalid, Message: "the customer needs a name and an email address", Fields: fields}
	}
	return c, nil
}

// Sell turns customer holds into a booking paid at the counter (cash,
// card or comp). The key makes a retry return the same booking, exactly
// as for a buyer's purchase (store.Sell shares its transaction).
func (s *Service) Sell(ctx context.Context, a Actor, event uuid.UUID, key string, holdIDs []uuid.UUID, payment string) (store.Booking, error) {
	if !a.Staff() {
		return store.Booking{}, apperr.E(apperr.Forbidden, "only box-office staff can sell at the counter")
	}
	if !slices.Contains(store.PaymentMethods, payment) {
		return store.Booking{}, &apperr.Error{Code: apperr.Invalid, Message: "payment_method must be cash, card or comp",
			Fields: map[string]string{"payment_method": "must be one of cash, card, comp"}}
	}
	if err := checkConversion(key, holdIDs, s.opt.MaxSeatsPerRequest); err != nil {
		return store.Booking{}, err
	}
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return store.Booking{}, err
	}
	b, err := s.store.Bookings.Sell(context.WithoutCancel(ctx), a.Org, event, a.User, key, holdIDs, payment)
	if err != nil || b.Replayed {
		return b, err
	}
	s.sold(ctx, ev, a, b)
	return b, nil
}

// Booking returns a booking: staff may read any of their organization's,
// a buyer only their own.
func (s *Service) Booking(ctx context.Context, a Actor, id uuid.UUID) (store.Booking, error) {
	user := a.User
	if a.Staff() {
		user = uuid.Nil
	}
	return s.store.Bookings.ByID(ctx, a.Org, user, id)
}

// FindBookings finds bookings by reference or email (staff only).
func (s *Service) FindBookings(ctx context.Context, a Actor, query string) ([]store.Booking, error) {
	if !a.Staff() {
		return nil, apperr.E(apperr.Forbidden, "only staff can look up bookings")
	}
	return s.store.Bookings.Find(ctx, a.Org, query)
}

// Cancel cancels some tickets of a booking (all when none are listed),
// with a reason for the audit log. The seats are available again at once:
// the change commits with one booking.cancelled audit row per seat, which
// the feed carries to every process and to Redis; this process publishes
// it as it does a release.
func (s *Service) Cancel(ctx context.Context, a Actor, booking uuid.UUID, ticketIDs []uuid.UUID, reason string) (store.Booking, error) {
	if !a.Staff() {
		return store.Booking{}, apperr.E(apperr.Forbidden, "only box-office staff can cancel bookings")
	}
	reason = strings.TrimSpace(reason)
	if reason == "" || utf8.RuneCountInString(reason) > 500 {
		return store.Booking{}, &apperr.Error{Code: apperr.Invalid, Message: "give a reason for cancelling; it is kept in the audit log",
			Fields: map[string]string{"reason": "must be 1 to 500 characters"}}
	}
	b, freed, err := s.store.Bookings.Cancel(context.WithoutCancel(ctx), a.Org, booking, a.User, ticketIDs, reason)
	if err != nil {
		return store.Booking{}, err
	}
	s.m.Cancelled.Add(float64(len(freed)))
	now := s.now()
	ds := make([]Delta, len(freed))
	for i, x := range freed {
		ds[i] = Delta{Org: a.Org, Event: b.EventID, Seat: x.SeatID, Kind: KindCancelled, Status: store.Available,
			Prev: store.Sold, Version: x.Version, Actor: a.User, PrevUser: b.UserID, At: now}
	}
	s.commit(ctx, a.Org, b.EventID, ds)
	return b, nil
}

// HouseSeats lists an event's house seats (staff only).
func (s *Service) HouseSeats(ctx context.Context, a Actor, event uuid.UUID) ([]store.HouseAllocation, error) {
	if !a.Staff() {
		return nil, apperr.E(apperr.Forbidden, "only staff can see house seats")
	}
	if _, err := s.event(ctx, a.Org, event); err != nil {
		return nil, err
	}
	return s.store.Bookings.HouseSeats(ctx, a.Org, event)
}

// CreateHouseSeats names a set of blocked seats kept back from sale.
func (s *Service) CreateHouseSeats(ctx context.Context, a Actor, event uuid.UUID, name string, seatIDs []uuid.UUID) (store.HouseAllocation, error) {
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
	if _, err := s.event(ctx, a.Org, event); err != nil {
		return store.HouseAllocation{}, err
	}
	return s.store.Bookings.CreateHouseSeats(ctx, a.Org, event, a.User, name, seatIDs)
}

// ReleaseHouseSeats puts every seat of an allocation on sale in one
// transaction, published like an unblock.
func (s *Service) ReleaseHouseSeats(ctx context.Context, a Actor, id uuid.UUID) (store.HouseAllocation, error) {
	if !a.Staff() {
		return store.HouseAllocation{}, apperr.E(apperr.Forbidden, "only staff can release house seats")
	}
	h, freed, err := s.store.Bookings.ReleaseHouseSeats(context.WithoutCancel(ctx), a.Org, id, a.User)
	if err != nil {
		return store.HouseAllocation{}, err
	}
	now := s.now()
	ds := make([]Delta, len(freed))
	for i, x := range freed {
		ds[i] = Delta{Org: a.Org, Event: h.EventID, Seat: x.SeatID, Kind: KindUnblocked, Status: store.Available,
			Prev: store.Blocked, Version: x.Version, Actor: a.User, At: now}
	}
	s.commit(ctx, a.Org, h.EventID, ds)
	return h, nil
}
