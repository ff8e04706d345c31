package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
)

// choiceOf reads the map's accessible-seating checkboxes, sent with every
// seat click and best-seats request.
func choiceOf(r *http.Request) hold.Choice {
	return hold.Choice{Accessible: r.FormValue("accessible") == "on", WithCompanion: r.FormValue("with_companion") == "on"}
}

// bestSeats holds the best seats for the buyer from the map's control;
// like a seat click, refusals are shown in the cart.
func (s *Server) bestSeats(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := pathID(r, "event")
	if err != nil {
		return err
	}
	if a.Role != hold.RoleBuyer {
		return s.answerCart(w, r, a, event, "Staff accounts cannot hold seats here; use the box office.", "info", "")
	}
	if err := s.limits.allowHold(r.Context(), a, s.deps.Cfg.HoldRatePerMinute); err != nil {
		return s.answerCart(w, r, a, event, "You are clicking very fast; wait a moment and try again.", "error", "")
	}
	n, err := strconv.Atoi(r.FormValue("count"))
	if err != nil {
		return s.answerCart(w, r, a, event, "Say how many seats you want.", "error", "")
	}
	res, err := s.deps.Core.HoldBest(r.Context(), a, event, hold.Best{Count: n, Category: r.FormValue("category"),
		Section: r.FormValue("section"), Choice: hold.Choice{Accessible: choiceOf(r).Accessible}}, hold.SourceWeb)
	if err != nil {
		e, ok := apperr.As(err)
		if !ok || e.Code == apperr.Internal || e.Code == apperr.NotFound {
			return err
		}
		return s.answerCart(w, r, a, event, e.Message, "error", "")
	}
	labels := make([]string, len(res.Holds))
	seats := make([]uuid.UUID, len(res.Holds))
	for i, h := range res.Holds {
		labels[i], seats[i] = s.deps.Core.SeatLabel(r.Context(), a, event, h.SeatID), h.SeatID
	}
	return s.answerCart(w, r, a, event, fmt.Sprintf("Held the best %d seats: %s.", len(labels), strings.Join(labels, ", ")), "success", "", seats...)
}
