package pages

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/web/httpx"
)

// The map's controls that hold seats the server picks for the buyer: best
// seats, and places of a standing (GA) section.

// choiceOf reads the map's accessible-seating checkboxes, sent with every
// seat click and best-seats request.
func choiceOf(r *http.Request) (accessible, withCompanion bool) {
	return r.FormValue("accessible") == "on", r.FormValue("with_companion") == "on"
}

// Best holds the best seats for the buyer from the map's control;
// like a seat click, refusals are shown in the cart. The page sends the
// request's key (see httpx.ValidFormKey), so a second submit of the same request
// answers with the first one's seats.
func (p *Cart) Best(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	if a.Role != hold.RoleBuyer {
		return p.answer(w, r, a, event, "Staff accounts cannot hold seats here; use the box office.", "info")
	}
	if refused, err := p.unverified(w, r, a, event); refused || err != nil {
		return err
	}
	if err := p.limits.Hold(r.Context(), a.Org, a.User); err != nil {
		return p.answer(w, r, a, event, "You are clicking very fast; wait a moment and try again.", "error")
	}
	n, err := strconv.Atoi(r.FormValue("count"))
	if err != nil {
		return p.answer(w, r, a, event, "Say how many seats you want.", "error")
	}
	key := r.FormValue("key")
	if !httpx.ValidFormKey(key) {
		return p.answer(w, r, a, event, httpx.MalformedFormKey, "error")
	}
	accessible, _ := choiceOf(r)
	res, err := p.holds.Hold(r.Context(), a, hold.Request{Event: event,
		Best:       &hold.Best{Count: n, Category: r.FormValue("category"), Section: r.FormValue("section")},
		Accessible: accessible, Key: key, Source: hold.SourceWeb})
	if err != nil {
		e, ok := httpx.DomainError(err)
		if !ok || e.Code == apperr.Internal || e.Code == apperr.NotFound {
			return err
		}
		return p.answer(w, r, a, event, e.Message, "error")
	}
	labels := make([]string, len(res.Holds))
	seats := make([]uuid.UUID, len(res.Holds))
	for i, h := range res.Holds {
		labels[i], seats[i] = p.seats.SeatLabel(r.Context(), a, event, h.SeatID), h.SeatID
	}
	return p.answer(w, r, a, event, fmt.Sprintf("Held the best %d seats: %s.", len(labels), strings.Join(labels, ", ")), "success", seats...)
}

// Places is the map's "hold places" form: count places of a GA
// section, answered with the cart (the count changes live on every map).
// Keyed as the best-seats form is (httpx.ValidFormKey).
func (p *Cart) Places(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	section := r.PathValue("section")
	if a.Role != hold.RoleBuyer {
		return p.answer(w, r, a, event, "Staff accounts cannot hold places here; use the box office.", "info")
	}
	n, err := strconv.Atoi(strings.TrimSpace(r.FormValue("count")))
	if err != nil || n < 1 || n > p.maxSeats {
		return p.answer(w, r, a, event, "Choose between 1 and "+strconv.Itoa(p.maxSeats)+" places.", "error")
	}
	if refused, err := p.unverified(w, r, a, event); refused || err != nil {
		return err
	}
	if err := p.limits.Hold(r.Context(), a.Org, a.User); err != nil {
		return p.answer(w, r, a, event, "You are clicking very fast; wait a moment and try again.", "error")
	}
	key := r.FormValue("key")
	if !httpx.ValidFormKey(key) {
		return p.answer(w, r, a, event, httpx.MalformedFormKey, "error")
	}
	req := hold.Request{Event: event, GA: &hold.GA{Section: section, Count: n}, Key: key, Source: hold.SourceWeb}
	if _, err := p.holds.Hold(r.Context(), a, req); err != nil {
		e, ok := httpx.DomainError(err)
		if !ok || e.Code == apperr.Internal || e.Code == apperr.NotFound {
			return err
		}
		return p.answer(w, r, a, event, e.Message, "error")
	}
	return p.answer(w, r, a, event, "", "")
}
