package hold

// An event's seats as the hot cache has them, for maps, carts and labels.

import (
	"context"

	"github.com/google/uuid"

	"seatd/internal/chart"
	"seatd/internal/store"
)

// Seats returns every seat of an event in idx order, from the hot cache.
func (es *Events) Seats(ctx context.Context, a Actor, event uuid.UUID) ([]store.Section, []store.Seat, error) {
	ev, err := es.e.event(ctx, a.Org, event)
	if err != nil {
		return nil, nil, err
	}
	secs, _ := ev.occupancy()
	return secs, ev.snapshot(), nil
}

// SeatLayout returns one seat of an event cached in this process. It does
// no tenancy check: it is for renderers of deltas this process already
// received for that organization's event.
func (es *Events) SeatLayout(org, event, seat uuid.UUID) (SeatView, bool) {
	ev := es.e.cached(org, event)
	if ev == nil {
		return SeatView{}, false
	}
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	st, ok := ev.lookup(seat)
	if !ok {
		return SeatView{}, false
	}
	sec := ev.sections[ev.sectionOf[st.SectionID]]
	return SeatView{Seat: *st, Section: sec.Label, Cat: catIndex(ev.settings.Load().Categories, st.Category),
		Standing: sec.Kind == chart.GA}, true
}

// SeatViews returns every seat of an event with section labels, in idx
// order (the tenancy gate applies).
func (es *Events) SeatViews(ctx context.Context, a Actor, event uuid.UUID) ([]store.Section, []SeatView, error) {
	ev, err := es.e.event(ctx, a.Org, event)
	if err != nil {
		return nil, nil, err
	}
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	out := make([]SeatView, len(ev.all))
	cats := ev.settings.Load().Categories
	for i, st := range ev.all {
		out[i] = SeatView{Seat: st, Section: ev.sections[ev.sectionOf[st.SectionID]].Label, Cat: catIndex(cats, st.Category)}
	}
	return ev.sections, out, nil
}

// SeatLabel names a seat of an event for people ("B-4-12").
func (es *Events) SeatLabel(ctx context.Context, a Actor, event, seat uuid.UUID) string {
	ev, err := es.e.event(ctx, a.Org, event)
	if err != nil {
		return seat.String()
	}
	return seatLabel(ev, seat)
}

// GASection is a general-admission section and its places left (available
// now in this process's view: a hold may still take them).
type GASection struct {
	ID       uuid.UUID
	Label    string
	Name     string
	Capacity int
	Left     int
}

// GASections lists the event's GA sections with their places left, from
// the hot cache.
func (es *Events) GASections(ctx context.Context, a Actor, event uuid.UUID) ([]GASection, error) {
	ev, err := es.e.event(ctx, a.Org, event)
	if err != nil {
		return nil, err
	}
	secs, counts := ev.occupancy()
	var out []GASection
	for i, sec := range secs {
		if sec.Kind == chart.GA {
			out = append(out, GASection{ID: sec.ID, Label: sec.Label, Name: sec.Name, Capacity: sec.Capacity,
				Left: counts[i].Available})
		}
	}
	return out, nil
}

// SeatView is a seat's layout and state with its section label, for
// rendering.
type SeatView struct {
	store.Seat
	Section string
	// Cat is the 1-based position of the seat's category among the
	// event's categories (0: none), for the map's colour and cue.
	Cat int
	// Standing: a place of a standing (general admission) section.
	Standing bool
}

// catIndex is the 1-based position of a category key among cats.
func catIndex(cats []store.Category, key string) int {
	if key == "" {
		return 0
	}
	for i, c := range cats {
		if c.Key == key {
			return i + 1
		}
	}
	return 0
}

// Label names the seat for people: section-row-number ("B-4-12").
func (v SeatView) Label() string { return store.SeatLabel(v.Section, v.Row, v.Number) }

// CartLabel names the seat in a buyer's cart: its label, or for a place
// of a standing section, the section and the place's number ("GA place
// 94"), since a place has no row a buyer would look for.
func (v SeatView) CartLabel() string {
	if v.Standing {
		return store.PlaceLabel(v.Section, v.Number)
	}
	return v.Label()
}
