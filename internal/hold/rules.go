package hold

// The hold rules the hot cache checks early, and the refusals every tier
// gives in the same words: seats taken, the cap, the sales window, the
// accessible hold-back and the orphan rule
// (docs/architecture.md#the-hold-algorithm).

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// seatTaken is the refusal of seats someone else holds, bought or blocked.
func seatTaken(ids []uuid.UUID, label func(uuid.UUID) string) error {
	return seatsRefused(apperr.SeatTaken, ids, label,
		"seat %s was just taken by someone else", "seats %v were just taken by someone else")
}

// seatsRefused is a refusal naming seats: their ids for clients, their
// labels in the message, worded for one seat (one) or for several (many).
func seatsRefused(code apperr.Code, ids []uuid.UUID, label func(uuid.UUID) string, one, many string) error {
	e := &apperr.Error{Code: code}
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		e.Seats = append(e.Seats, id.String())
		names = append(names, label(id))
	}
	if len(names) == 1 {
		e.Message = fmt.Sprintf(one, names[0])
	} else {
		e.Message = fmt.Sprintf(many, names)
	}
	return e
}

// holdLimit is the refusal of a buyer at the cap.
func holdLimit(cap int) error {
	return &apperr.Error{Code: apperr.HoldLimit,
		Message: fmt.Sprintf("you can hold at most %d seats for this event", cap)}
}

// errNotOnSale is Postgres refusing a hold because the event does not
// take it now, which this process's cache did not know yet.
var errNotOnSale = &apperr.Error{Code: apperr.NotOnSale, Message: "this event does not take holds now"}

// NotOnSale explains why an event does not take a buyer's holds at now,
// or is nil when it does.
func NotOnSale(e store.Event, now time.Time) error {
	if OpenTo(&e, false, now) {
		return nil
	}
	return notOnSale(&e, now)
}

// notOnSale is the refusal of a hold on an event that does not take it.
func notOnSale(e *store.Event, now time.Time) error {
	err := &apperr.Error{Code: apperr.NotOnSale}
	loc, lerr := time.LoadLocation(e.TimeZone)
	if lerr != nil {
		loc = time.UTC
	}
	switch {
	case e.Status == store.EventClosed:
		err.Message = "sales for this event are closed"
	case e.Status == store.EventDraft:
		err.Message = "this event is not on sale yet"
	case e.OnSaleAt != nil && now.Before(*e.OnSaleAt):
		err.Message = "sales open " + e.OnSaleAt.In(loc).Format("Mon 2 Jan 2006 15:04 MST")
	default:
		err.Message = "sales for this event have ended"
	}
	return err
}

// OpenTo mirrors the SQL event_open: whether e takes holds of a staff
// member or a buyer at now.
func OpenTo(e *store.Event, staff bool, now time.Time) bool {
	if staff {
		return e.Status != store.EventClosed
	}
	return e.Status == store.EventOnSale && (e.OnSaleAt == nil || !now.Before(*e.OnSaleAt)) &&
		(e.SalesEndAt == nil || now.Before(*e.SalesEndAt))
}

// orphanSeat is the refusal of a hold that would leave seats alone in
// their row under the event's strict orphan rule.
func orphanSeat(ids []uuid.UUID, label func(uuid.UUID) string) error {
	return seatsRefused(apperr.OrphanSeat, ids, label,
		"this would leave seat %s alone between taken seats; hold it too or choose seats beside it",
		"this would leave seats %v alone between taken seats; hold them too or choose other seats")
}

// rowKeys names the rows of seats, each once, for store.HoldParams.Rows:
// their advisory lock keys (store.RowKey).
func rowKeys(event uuid.UUID, seats []store.Seat) []uint64 {
	keys := make([]uint64, 0, 1)
	for _, st := range seats {
		if k := uint64(store.RowKey(event, st.SectionID, st.Row)); !slices.Contains(keys, k) { // #nosec G115 -- a key's bits
			keys = append(keys, k)
		}
	}
	return keys
}

// heldBack reports whether accessible and companion seats of the event
// are still kept for buyers who ask for them at now. An event without a
// release time never holds them back.
func heldBack(set *store.Event, now time.Time) bool {
	return set.AccessibleReleaseAt != nil && now.Before(*set.AccessibleReleaseAt)
}

// accessibleGate refuses a buyer who did not ask for accessible seating a
// seat held back for those who did. Staff are not bound. The gate reads
// the cached event settings, as the cheap early refusal: the hold
// statement decides from the event row (accessible_open), so a release
// time moved behind this process's back is enforced all the same.
func accessibleGate(set *store.Event, a Actor, asked bool, seats []store.Seat, now time.Time, label func(uuid.UUID) string) error {
	if a.Staff() || asked || !heldBack(set, now) {
		return nil
	}
	for _, st := range seats {
		if st.Accessible || st.Companion {
			return heldBackErr(st.ID, *set.AccessibleReleaseAt, label)
		}
	}
	return nil
}

// heldBackErr is the refusal of an accessible or companion seat kept for
// buyers who ask for accessible seating until release.
func heldBackErr(id uuid.UUID, release time.Time, label func(uuid.UUID) string) error {
	return &apperr.Error{Code: apperr.AccessibleReserved, Seats: []string{id.String()},
		Message: fmt.Sprintf("seat %s is kept for buyers who need accessible seating until %s; tick \"I need accessible seating\" if you do",
			label(id), release.UTC().Format(time.RFC3339))}
}

// seatLabel names a seat of a cached event for people: section-row-number.
func seatLabel(ev *eventState, id uuid.UUID) string {
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	st, ok := ev.lookup(id)
	if !ok {
		return id.String()
	}
	return SeatView{Seat: *st, Section: ev.sections[ev.sectionOf[st.SectionID]].Label}.Label()
}
