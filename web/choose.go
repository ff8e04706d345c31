package web

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

// choiceOf reads the map's accessible-seating checkboxes, sent with every
// seat click and best-seats request.
func choiceOf(r *http.Request) (accessible, withCompanion bool) {
	return r.FormValue("accessible") == "on", r.FormValue("with_companion") == "on"
}

// bestSeats holds the best seats for the buyer from the map's control;
// like a seat click, refusals are shown in the cart. The page sends the
// request's key (see validFormKey), so a second submit of the same request
// answers with the first one's seats.
func (s *Server) bestSeats(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	if a.Role != hold.RoleBuyer {
		return s.answerCart(w, r, a, event, "Staff accounts cannot hold seats here; use the box office.", "info", "")
	}
	if err := s.limits.Hold(r.Context(), a.Org, a.User); err != nil {
		return s.answerCart(w, r, a, event, "You are clicking very fast; wait a moment and try again.", "error", "")
	}
	n, err := strconv.Atoi(r.FormValue("count"))
	if err != nil {
		return s.answerCart(w, r, a, event, "Say how many seats you want.", "error", "")
	}
	key := r.FormValue("key")
	if !httpx.ValidFormKey(key) {
		return s.answerCart(w, r, a, event, httpx.MalformedFormKey, "error", "")
	}
	accessible, _ := choiceOf(r)
	res, err := s.deps.Holds.Hold(r.Context(), a, hold.Request{Event: event,
		Best:       &hold.Best{Count: n, Category: r.FormValue("category"), Section: r.FormValue("section")},
		Accessible: accessible, Key: key, Source: hold.SourceWeb})
	if err != nil {
		e, ok := httpx.DomainError(err)
		if !ok || e.Code == apperr.Internal || e.Code == apperr.NotFound {
			return err
		}
		return s.answerCart(w, r, a, event, e.Message, "error", "")
	}
	labels := make([]string, len(res.Holds))
	seats := make([]uuid.UUID, len(res.Holds))
	for i, h := range res.Holds {
		labels[i], seats[i] = s.deps.Events.SeatLabel(r.Context(), a, event, h.SeatID), h.SeatID
	}
	return s.answerCart(w, r, a, event, fmt.Sprintf("Held the best %d seats: %s.", len(labels), strings.Join(labels, ", ")), "success", "", seats...)
}
