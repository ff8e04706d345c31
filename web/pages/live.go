package pages

import (
	"context"
	"strings"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
)

// LiveSeats renders a delta into the seat's HTML fragment, once per
// variant per process (live.Renderer: the hub calls it).
type LiveSeats struct {
	seats Seats
}

// NewLiveSeats returns the seat frames of the seats' events.
func NewLiveSeats(seats Seats) *LiveSeats { return &LiveSeats{seats: seats} }

// Render renders the frame of d, for its holder when mine.
func (lr *LiveSeats) Render(d hold.Delta, mine bool) []byte {
	st, ok := lr.seats.SeatLayout(d.Org, d.Event, d.Seat)
	if !ok {
		return nil
	}
	if b, ga := lr.renderGA(d, mine, st); ga {
		return b
	}
	// The delta is the truth for this frame (the cache may already be newer
	// or, on another goroutine, older).
	st.Status, st.Version = d.Status, d.Version
	vm := views.Seat{ID: d.Seat.String(), EventID: d.Event.String(), Section: st.Section, Row: st.Row, Number: st.Number,
		Status: string(d.Status), Version: d.Version, Idx: st.Idx,
		Mine: mine && d.Status == store.Held, Cat: st.Cat, Flag: seatFlag(st.Seat)}
	var item *views.CartHold
	if vm.Mine {
		item = &views.CartHold{HoldID: d.HoldID.String(), SeatID: d.Seat.String(), Label: st.CartLabel(), HeldUntil: d.HeldUntil,
			Extended: d.Kind == hold.KindExtended, Offer: d.Kind == hold.KindOffered}
		lr.livePrice(item, d, st)
	}
	var b strings.Builder
	if err := views.LiveSeat(vm, item).Render(context.Background(), &b); err != nil {
		return nil
	}
	return []byte(b.String())
}

// livePrice prices the cart line of seat st that arrives over the live
// socket; it stays unpriced when the event is not at hand.
func (lr *LiveSeats) livePrice(item *views.CartHold, d hold.Delta, st hold.SeatView) {
	prices, err := lr.seats.Prices(context.Background(), hold.Actor{Org: d.Org}, d.Event)
	if err == nil {
		priced(item, prices, st.Category)
	}
}

// renderGA renders a GA place's delta (ok false for a seat): the section's
// places left from this process's cache, and the holder's cart line.
func (lr *LiveSeats) renderGA(d hold.Delta, mine bool, st hold.SeatView) ([]byte, bool) {
	secs, err := lr.seats.GASections(context.Background(), hold.Actor{Org: d.Org}, d.Event)
	if err != nil {
		return nil, false
	}
	for _, sec := range secs {
		if sec.Label != st.Section {
			continue
		}
		var item *views.CartHold
		if mine && d.Status == store.Held {
			item = &views.CartHold{HoldID: d.HoldID.String(), SeatID: d.Seat.String(), Label: st.CartLabel(),
				HeldUntil: d.HeldUntil, Extended: d.Kind == hold.KindExtended}
			lr.livePrice(item, d, st)
		}
		var b strings.Builder
		if err := views.LiveGA(d.Event.String(), d.Seat.String(), sec.ID.String(), sec.Left, item, d.Status == store.Held).
			Render(context.Background(), &b); err != nil {
			return nil, true
		}
		return []byte(b.String()), true
	}
	return nil, false
}
