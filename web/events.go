package web

import (
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
)

type eventJSON struct {
	ID       uuid.UUID `json:"id"`
	Name     string    `json:"name"`
	Venue    string    `json:"venue"`
	StartsAt time.Time `json:"starts_at"`
	Seats    int       `json:"seats"`
}

func eventView(e store.Event) eventJSON {
	return eventJSON{ID: e.ID, Name: e.Name, Venue: e.Venue, StartsAt: e.StartsAt.UTC(), Seats: e.Seats}
}

// listEvents answers the events of the session's organization.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	evs, err := s.deps.Store.Events(r.Context(), a.Org)
	if err != nil {
		return err
	}
	out := make([]eventJSON, len(evs))
	for i, e := range evs {
		out[i] = eventView(e)
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": out})
	return nil
}

func (s *Server) getEvent(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := pathID(r, "event")
	if err != nil {
		return err
	}
	e, err := s.deps.Store.Event(r.Context(), a.Org, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, eventView(e))
	return nil
}

type seatJSON struct {
	ID      uuid.UUID        `json:"id"`
	Section string           `json:"section"`
	Row     string           `json:"row"`
	Number  int              `json:"number"`
	Status  store.SeatStatus `json:"status"`
	Version int64            `json:"version"`
	X       int              `json:"x"`
	Y       int              `json:"y"`
}

// listSeats answers every seat of an event from the hot cache.
func (s *Server) listSeats(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := pathID(r, "event")
	if err != nil {
		return err
	}
	secs, seats, err := s.deps.Core.Seats(r.Context(), a, event)
	if err != nil {
		return err
	}
	labels := make(map[uuid.UUID]string, len(secs))
	for _, sec := range secs {
		labels[sec.ID] = sec.Label
	}
	out := make([]seatJSON, len(seats))
	for i, st := range seats {
		out[i] = seatJSON{ID: st.ID, Section: labels[st.SectionID], Row: st.Row, Number: st.Number,
			Status: st.Status, Version: st.Version, X: st.X, Y: st.Y}
	}
	writeJSON(w, http.StatusOK, map[string]any{"seats": out})
	return nil
}
