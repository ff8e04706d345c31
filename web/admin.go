package web

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
	"seatd/web/query"
)

// Pages of the staff hold list.
const (
	holdPageDefault = 100
	holdPageMax     = 500
)

// holdPageJSON is a page of an event's active holds; next is the cursor of
// the following page (the after parameter), null on the last page.
type holdPageJSON struct {
	Holds []holdJSON `json:"holds"`
	Next  *string    `json:"next"`
}

// eventHolds lists an event's active holds with their holders (staff), a
// page at a time: ?limit= (1 to 500, default 100) and ?after= (the next
// cursor of the page before), soonest expiry first.
func (s *Server) eventHolds(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit := holdPageDefault
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > holdPageMax {
			return &apperr.Error{Code: apperr.Invalid, Message: "limit must be a number from 1 to 500",
				Fields: map[string]string{"limit": "must be 1 to 500"}}
		}
		limit = n
	}
	after, err := query.DecodeHoldCursor(q.Get("after"))
	if err != nil {
		return err
	}
	if _, err := s.deps.Store.Events.Event(r.Context(), a.Org, event); err != nil {
		return err
	}
	p, err := s.deps.Store.Audit.ActiveHoldsPage(r.Context(), a.Org, event, store.HoldFilter{}, after, limit, false)
	if err != nil {
		return err
	}
	out := holdPageJSON{Holds: make([]holdJSON, len(p.Holds))}
	for i, h := range p.Holds {
		out.Holds[i] = holdView(h.Hold)
		user := h.UserID
		out.Holds[i].UserID = &user
	}
	if !p.Next.IsZero() {
		next := query.EncodeHoldCursor(p.Next)
		out.Next = &next
	}
	httpx.WriteJSON(w, http.StatusOK, out)
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

type categoryOccupancyJSON struct {
	Category    string `json:"category"`
	Name        string `json:"name"`
	PriceMinor  int64  `json:"price_minor"`
	Currency    string `json:"currency"`
	RevenueSold int64  `json:"revenue_sold"`
	RevenueHeld int64  `json:"revenue_held"`
	// RevenueSoldOther is what was paid in other currencies (the
	// category's currency changed after sales), by currency.
	RevenueSoldOther map[string]int64 `json:"revenue_sold_other,omitempty"`
	countsJSON
}

type occupancyJSON struct {
	countsJSON
	PercentAvailable float64                `json:"percent_available"`
	PercentHeld      float64                `json:"percent_held"`
	PercentSold      float64                `json:"percent_sold"`
	PercentBlocked   float64                `json:"percent_blocked"`
	Sections         []sectionOccupancyJSON `json:"sections"`
	// Categories are counted like sections, with revenue: sold as the
	// tickets were paid, held at the categories' prices.
	Categories []categoryOccupancyJSON `json:"categories"`
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
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	o, err := s.deps.Monitor.PaidOccupancy(r.Context(), a, event)
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
	out.Categories = make([]categoryOccupancyJSON, len(o.Categories))
	for i, c := range o.Categories {
		out.Categories[i] = categoryOccupancyJSON{Category: c.Key, Name: c.Name, PriceMinor: c.PriceMinor, Currency: c.Currency,
			RevenueSold: c.RevenueSold, RevenueHeld: c.RevenueHeld, RevenueSoldOther: c.RevenueSoldOther, countsJSON: countsView(c.Counts)}
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

type blockInput struct {
	Reason string `json:"reason" validate:"max=500"`
}

type blockJSON struct {
	SeatID  uuid.UUID        `json:"seat_id"`
	Status  store.SeatStatus `json:"status"`
	Version int64            `json:"version"`
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
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	seat, err := httpx.PathID(r, "seat")
	if err != nil {
		return err
	}
	var in blockInput
	if err := s.dec.OptionalJSON(w, r, &in); err != nil {
		return err
	}
	version, err := s.deps.Holds.SetBlocked(r.Context(), a, event, seat, blocked, in.Reason)
	if err != nil {
		return err
	}
	status := store.Available
	if blocked {
		status = store.Blocked
	}
	httpx.WriteJSON(w, http.StatusOK, blockJSON{SeatID: seat, Status: status, Version: version})
	return nil
}

// registryJSON is a registry answer with the time it was taken: within
// the cooldown (see registryFlights) callers get the same answer again.
type registryJSON struct {
	hold.Registry
	CheckedAt time.Time `json:"checked_at"`
}

// registry answers how the three tiers agree about an event's holds.
func (s *Server) registry(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	reg, at, err := s.flights.status(r.Context(), a, event)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, registryJSON{Registry: reg, CheckedAt: at.UTC()})
	return nil
}

// reconcile rebuilds Redis and the hot caches from Postgres. A reconcile
// asked for within the cooldown of the last one is not run again: it is
// answered with the last one's result, and checked_at says when that was.
func (s *Server) reconcile(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	var in struct{}
	if err := s.dec.OptionalJSON(w, r, &in); err != nil {
		return err
	}
	reg, at, err := s.flights.reconciled(r.Context(), a, event)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, registryJSON{Registry: reg, CheckedAt: at.UTC()})
	return nil
}
