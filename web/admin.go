package web

import (
	"math"
	"net/http"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
)

// eventHolds lists an event's active holds with their holders (staff).
func (s *Server) eventHolds(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := pathID(r, "event")
	if err != nil {
		return err
	}
	hs, err := s.app.Core.EventHolds(r.Context(), a, event)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, holdsView(hs, true))
	return nil
}

type countsJSON struct {
	Available int `json:"available"`
	Held      int `json:"held"`
	Sold      int `json:"sold"`
	Blocked   int `json:"blocked"`
	Total     int `json:"total"`
}

func countsView(c store.Counts) countsJSON {
	return countsJSON{Available: c.Available, Held: c.Held, Sold: c.Sold, Blocked: c.Blocked, Total: c.Total()}
}

type sectionOccupancyJSON struct {
	ID    uuid.UUID `json:"id"`
	Label string    `json:"label"`
	Name  string    `json:"name"`
	countsJSON
}

type occupancyJSON struct {
	countsJSON
	PercentAvailable float64                `json:"percent_available"`
	PercentHeld      float64                `json:"percent_held"`
	PercentSold      float64                `json:"percent_sold"`
	PercentBlocked   float64                `json:"percent_blocked"`
	Sections         []sectionOccupancyJSON `json:"sections"`
}

// percent is n of total in percent, to two decimals (one seat of a
// 100 000-seat event is 0.001 %, so fewer decimals would hide sales).
func percent(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return math.Round(float64(n)*10000/float64(total)) / 100
}

// occupancy answers an event's live counts (staff).
func (s *Server) occupancy(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := pathID(r, "event")
	if err != nil {
		return err
	}
	o, err := s.app.Core.Occupancy(r.Context(), a, event)
	if err != nil {
		return err
	}
	total := o.Total()
	out := occupancyJSON{
		countsJSON:       countsView(o.Counts),
		PercentAvailable: percent(o.Available, total),
		PercentHeld:      percent(o.Held, total),
		PercentSold:      percent(o.Sold, total),
		PercentBlocked:   percent(o.Blocked, total),
		Sections:         make([]sectionOccupancyJSON, len(o.Sections)),
	}
	for i, sec := range o.Sections {
		out.Sections[i] = sectionOccupancyJSON{ID: sec.ID, Label: sec.Label, Name: sec.Name, countsJSON: countsView(sec.Counts)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type blockInput struct {
	Reason string `json:"reason" validate:"max=500"`
}

type blockJSON struct {
	SeatID  uuid.UUID `json:"seat_id"`
	Status  string    `json:"status"`
	Version int64     `json:"version"`
}

func (s *Server) blockSeat(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return s.setBlocked(w, r, a, true)
}

func (s *Server) unblockSeat(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return s.setBlocked(w, r, a, false)
}

// setBlocked blocks an available seat or unblocks a blocked one
// (organizer); 409 when the seat is in another state.
func (s *Server) setBlocked(w http.ResponseWriter, r *http.Request, a hold.Actor, blocked bool) error {
	event, err := pathID(r, "event")
	if err != nil {
		return err
	}
	seat, err := pathID(r, "seat")
	if err != nil {
		return err
	}
	var in blockInput
	if err := s.dec.optionalJSON(w, r, &in); err != nil {
		return err
	}
	version, err := s.app.Core.SetBlocked(r.Context(), a, event, seat, blocked, in.Reason)
	if err != nil {
		return err
	}
	status := store.Available
	if blocked {
		status = store.Blocked
	}
	writeJSON(w, http.StatusOK, blockJSON{SeatID: seat, Status: status, Version: version})
	return nil
}

// registry answers how the three tiers agree about an event's holds.
func (s *Server) registry(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := pathID(r, "event")
	if err != nil {
		return err
	}
	reg, err := s.app.Core.RegistryStatus(r.Context(), a, event)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, reg)
	return nil
}

// reconcile rebuilds Redis and the hot caches from Postgres.
func (s *Server) reconcile(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := pathID(r, "event")
	if err != nil {
		return err
	}
	var in struct{}
	if err := s.dec.optionalJSON(w, r, &in); err != nil {
		return err
	}
	reg, err := s.app.Core.Reconcile(r.Context(), a, event)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, reg)
	return nil
}
