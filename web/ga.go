package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
)

// gaPanel is the map's list of GA sections, and the seats without the GA
// places (which are counted, not drawn).
func (s *Server) gaPanel(ctx context.Context, a hold.Actor, event uuid.UUID, seats []hold.SeatView) ([]views.GASection, []hold.SeatView, error) {
	secs, err := s.deps.Events.GASections(ctx, a, event)
	if err != nil || len(secs) == 0 {
		return nil, seats, err
	}
	ga := map[string]bool{}
	out := make([]views.GASection, len(secs))
	for i, sec := range secs {
		ga[sec.Label] = true
		out[i] = views.GASection{ID: sec.ID.String(), Label: sec.Label, Name: sec.Name, Capacity: sec.Capacity, Left: sec.Left}
	}
	drawn := make([]hold.SeatView, 0, len(seats))
	for _, st := range seats {
		if !ga[st.Section] {
			drawn = append(drawn, st)
		}
	}
	return out, drawn, nil
}

// holdGAPlaces is the map's "hold places" form: count places of a GA
// section, answered with the cart (the count changes live on every map).
// Keyed as the best-seats form is (validFormKey).
func (s *Server) holdGAPlaces(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	section := r.PathValue("section")
	if a.Role != hold.RoleBuyer {
		return s.answerCart(w, r, a, event, "Staff accounts cannot hold places here; use the box office.", "info", "")
	}
	n, err := strconv.Atoi(strings.TrimSpace(r.FormValue("count")))
	if err != nil || n < 1 || n > s.deps.Cfg.MaxSeatsPerRequest {
		return s.answerCart(w, r, a, event, "Choose between 1 and "+strconv.Itoa(s.deps.Cfg.MaxSeatsPerRequest)+" places.", "error", "")
	}
	if err := s.limits.Hold(r.Context(), a.Org, a.User); err != nil {
		return s.answerCart(w, r, a, event, "You are clicking very fast; wait a moment and try again.", "error", "")
	}
	key := r.FormValue("key")
	if !httpx.ValidFormKey(key) {
		return s.answerCart(w, r, a, event, httpx.MalformedFormKey, "error", "")
	}
	req := hold.Request{Event: event, GA: &hold.GA{Section: section, Count: n}, Key: key, Source: hold.SourceWeb}
	if _, err := s.deps.Holds.Hold(r.Context(), a, req); err != nil {
		e, ok := httpx.DomainError(err)
		if !ok || e.Code == apperr.Internal || e.Code == apperr.NotFound {
			return err
		}
		return s.answerCart(w, r, a, event, e.Message, "error", "")
	}
	return s.answerCart(w, r, a, event, "", "", "")
}

// renderGA renders a GA place's delta (ok false for a seat): the section's
// places left from this process's cache, and the holder's cart line.
func (lr liveRenderer) renderGA(d hold.Delta, mine bool, st hold.SeatView) ([]byte, bool) {
	secs, err := lr.events.GASections(context.Background(), hold.Actor{Org: d.Org}, d.Event)
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
