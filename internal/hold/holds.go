package hold

// Making a hold: the request, its checks, and the one path every kind of
// request takes (docs/architecture.md#the-hold-algorithm). Reading on:
// once.go (a keyed request), pick.go (best available and standing
// places), tiers.go (the hot cache's early refusal, then fast.go or
// fallback.go).

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

// Holds makes, lists, releases, extends and buys holds, and blocks seats.
type Holds struct {
	e *Engine
}

// NewHolds builds the holding job on the engine.
func NewHolds(e *Engine) *Holds { return &Holds{e: e} }

// Request is one hold request: which seats of which event, for whom, and
// under which idempotency key. Exactly one of Seats, Best and GA says
// which seats; with neither Best nor GA, the request names its seats.
type Request struct {
	Event uuid.UUID
	// Seats are the seats the buyer chose, all held or none.
	Seats []uuid.UUID
	// WithCompanion adds each named accessible seat's companion seat (the
	// companion-flagged seat beside it), held in the same step.
	WithCompanion bool
	// Best asks the core to choose the best seats available
	// (docs/architecture.md#choosing-seats).
	Best *Best
	// GA asks for places of a general-admission section.
	GA *GA
	// Accessible: the buyer needs accessible seating, so the seats held
	// back for it until the event's accessible_release_at are theirs too
	// (and best available may choose them).
	Accessible bool
	// Customer, for staff only, holds the seats for a named customer
	// until Until (at least a minute and at most MaxCustomerHold ahead),
	// instead of for the hold TTL; such holds are never reaped before
	// their time, and a customer's hold is always the box office's.
	Customer *store.Customer
	Until    time.Time
	// Key is the idempotency key of a request whose seats the core picks
	// (Best, GA): a repeat with the same key answers the first request's
	// holds instead of holding more (see once). Named seats need none:
	// holding them again answers the same holds.
	Key string
	// Source says where the request came from (SourceWeb, SourceAPI, ...).
	Source string
}

// Best is a best-available request: Count seats, optionally of one
// category and/or one section (by label).
type Best struct {
	Count    int
	Category string
	Section  string
}

// GA is a request for Count places of the general-admission section
// labelled Section.
type GA struct {
	Section string
	Count   int
}

// Result is the answer to a hold request.
type Result struct {
	// Holds has one active hold per requested seat, in request order.
	Holds []store.Hold
	// Created is true when at least one hold is new (201); false when the
	// user already held every seat (an idempotent 200).
	Created bool
}

// MaxCustomerHold is how far ahead a customer's hold may run.
const MaxCustomerHold = 14 * 24 * time.Hour

// Hold holds the seats r asks for, for the actor or the customer r names:
// all of them or none.
func (h *Holds) Hold(ctx context.Context, a Actor, r Request) (Result, error) {
	if err := h.check(a, &r); err != nil {
		return Result{}, err
	}
	if r.Key == "" {
		return h.hold(ctx, a, r)
	}
	return h.once(ctx, a, r)
}

// check refuses a request of the wrong shape and checks (and normalizes)
// its customer; the counts and the seats are checked on the way.
func (h *Holds) check(a Actor, r *Request) error {
	picked := r.Best != nil || r.GA != nil
	switch {
	case r.Best != nil && r.GA != nil:
		return &apperr.Error{Code: apperr.Invalid, Message: "ask for best seats or standing places, not both",
			Fields: map[string]string{"ga": "must not be given with best_available"}}
	case picked && len(r.Seats) > 0:
		return &apperr.Error{Code: apperr.Invalid, Message: "the seats are chosen for this request: name none",
			Fields: map[string]string{"seat_ids": "must not be given with best_available or ga"}}
	case picked && r.WithCompanion:
		return &apperr.Error{Code: apperr.Invalid, Message: "companion seats come with named accessible seats",
			Fields: map[string]string{"with_companion": "is only allowed with seat_ids"}}
	case !picked && r.Key != "":
		return &apperr.Error{Code: apperr.Invalid, Message: "holding named seats again answers the same holds: it takes no Idempotency-Key",
			Fields: map[string]string{"Idempotency-Key": "is only allowed with best_available or ga"}}
	case r.Customer == nil && !r.Until.IsZero():
		return &apperr.Error{Code: apperr.Invalid, Message: "held_until is for staff holding seats for a customer",
			Fields: map[string]string{"held_until": "is only allowed with customer"}}
	case r.Customer == nil:
		return nil
	}
	if !a.Staff() {
		return apperr.E(apperr.Forbidden, "only box-office staff can hold seats for a customer")
	}
	c, err := checkCustomer(*r.Customer)
	if err != nil {
		return err
	}
	now := h.e.now()
	switch {
	case !r.Until.After(now.Add(time.Minute)):
		return &apperr.Error{Code: apperr.Invalid, Message: "a customer's hold must last at least a minute",
			Fields: map[string]string{"held_until": "must be in the future"}}
	case r.Until.After(now.Add(MaxCustomerHold)):
		return &apperr.Error{Code: apperr.Invalid, Message: "a customer's hold can last at most 14 days",
			Fields: map[string]string{"held_until": "must be at most 14 days ahead"}}
	}
	r.Customer, r.Source = &c, SourceBoxOffice
	return nil
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

// hold runs a checked request: the seats it names, or the ones picked
// for it (pick.go), through holdSeats.
func (h *Holds) hold(ctx context.Context, a Actor, r Request) (Result, error) {
	switch {
	case r.Best != nil:
		return h.best(ctx, a, r)
	case r.GA != nil:
		return h.ga(ctx, a, r)
	}
	ids := r.Seats
	if r.WithCompanion {
		ev, err := h.e.event(ctx, a.Org, r.Event)
		if err != nil {
			return Result{}, err
		}
		ids = withCompanions(ev, ids)
	}
	return h.observe(a, r.Event, func() (Result, string, error) { return h.holdSeats(ctx, a, r, ids) })
}

// withCompanions appends, for every accessible seat in ids, the companion
// seat next to it in its row (number ±1), unless already listed.
func withCompanions(ev *eventState, ids []uuid.UUID) []uuid.UUID {
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	out := slices.Clone(ids)
	for _, id := range ids {
		i, ok := ev.pos[id]
		if !ok || !ev.all[i].Accessible {
			continue
		}
		st := ev.all[i]
		for _, o := range ev.all {
			if o.SectionID == st.SectionID && o.Row == st.Row && o.Companion &&
				(o.Number == st.Number-1 || o.Number == st.Number+1) && !slices.Contains(out, o.ID) {
				out = append(out, o.ID)
				break
			}
		}
	}
	return out
}

// observe runs a hold with its metrics and, for a failure, its log line;
// f returns the path it took.
func (h *Holds) observe(a Actor, event uuid.UUID, f func() (Result, string, error)) (Result, error) {
	m := h.e.m
	start := h.e.now()
	m.HoldAttempt.Inc()
	res, path, err := f()
	outcome := "ok"
	switch {
	case err == nil && res.Created:
		m.HoldSuccess.WithLabelValues(path).Inc()
	case err == nil:
		outcome = "idempotent"
		m.HoldSuccess.WithLabelValues("idempotent").Inc()
	case apperr.CodeOf(err) == apperr.Internal:
		m.HoldError.Inc()
		h.e.log.Error("hold failed", "org", a.Org, "event", event, "user", a.User, "path", path, "err", err)
	}
	if err != nil {
		outcome = string(apperr.CodeOf(err)) // one of apperr's few codes
	}
	// The waiting room's automatic rate reads its p99 from this
	// histogram too (waitroom.AIMD).
	m.HoldDuration.WithLabelValues(path, outcome).Observe(h.e.now().Sub(start).Seconds())
	return res, err
}
