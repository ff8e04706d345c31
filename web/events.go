package web

import (
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
	"seatd/web/query"
)

type priceJSON struct {
	Category   string `json:"category"`
	Name       string `json:"name,omitempty"`
	Color      string `json:"color,omitempty"`
	PriceMinor int64  `json:"price_minor"`
	Currency   string `json:"currency"`
}

type eventJSON struct {
	ID                  uuid.UUID         `json:"id"`
	Name                string            `json:"name"`
	Venue               string            `json:"venue"`
	StartsAt            time.Time         `json:"starts_at"`
	TimeZone            string            `json:"time_zone"`
	Status              store.EventStatus `json:"status"`
	OnSaleAt            *time.Time        `json:"on_sale_at"`
	SalesEndAt          *time.Time        `json:"sales_end_at"`
	ChartVersionID      *uuid.UUID        `json:"chart_version_id"`
	HoldTTL             *int              `json:"hold_ttl"` // seconds; null: the default
	MaxHoldsPerBuyer    *int              `json:"max_holds_per_buyer"`
	HoldExtension       *int              `json:"hold_extension"` // seconds a checkout adds; null: the default
	OrphanRule          string            `json:"orphan_rule"`
	AccessibleReleaseAt *time.Time        `json:"accessible_release_at"`
	Prices              []priceJSON       `json:"prices,omitempty"`
	Seats               int               `json:"seats"`
}

func eventView(e store.Event) eventJSON {
	out := eventJSON{ID: e.ID, Name: e.Name, Venue: e.Venue, StartsAt: e.StartsAt.UTC(), Seats: e.Seats,
		TimeZone: e.TimeZone, Status: e.Status, OnSaleAt: e.OnSaleAt, SalesEndAt: e.SalesEndAt, OrphanRule: e.OrphanRule,
		AccessibleReleaseAt: e.AccessibleReleaseAt}
	if e.ChartVersionID != uuid.Nil {
		out.ChartVersionID = &e.ChartVersionID
	}
	if e.HoldTTL > 0 {
		n := int(e.HoldTTL.Seconds())
		out.HoldTTL = &n
	}
	if e.MaxHoldsPerBuyer > 0 {
		out.MaxHoldsPerBuyer = &e.MaxHoldsPerBuyer
	}
	if e.HoldExtension > 0 {
		n := int(e.HoldExtension.Seconds())
		out.HoldExtension = &n
	}
	for _, c := range e.Categories {
		out.Prices = append(out.Prices, priceJSON{Category: c.Key, Name: c.Name, Color: c.Color, PriceMinor: c.PriceMinor, Currency: c.Currency})
	}
	return out
}

// listEvents answers the events of the session's organization.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	return httpx.List(w, "events", eventView)(s.events.List(r.Context(), a))
}

func (s *Server) getEvent(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	e, err := s.events.Event(r.Context(), a, id)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, eventView(e))
	return nil
}

// eventInput is the body of POST and PATCH /api/v1/events: every field is
// optional here; the core says which a new event needs, and checks them
// all at once.
type eventInput struct {
	Name                *string      `json:"name"`
	Venue               *string      `json:"venue"`
	StartsAt            *string      `json:"starts_at"`
	TimeZone            *string      `json:"time_zone"`
	ChartID             *string      `json:"chart_id"`
	OnSaleAt            *string      `json:"on_sale_at"`
	SalesEndAt          *string      `json:"sales_end_at"`
	Prices              *[]priceJSON `json:"prices" validate:"omitnil,max=100"`
	HoldTTL             *int         `json:"hold_ttl"`
	MaxHoldsPerBuyer    *int         `json:"max_holds_per_buyer"`
	HoldExtension       *int         `json:"hold_extension"`
	OrphanRule          *string      `json:"orphan_rule"`
	AccessibleReleaseAt *string      `json:"accessible_release_at"`
	Status              *string      `json:"status"`
}

func (in eventInput) core() hold.EventInput {
	out := hold.EventInput{Name: in.Name, Venue: in.Venue, StartsAt: in.StartsAt, TimeZone: in.TimeZone, ChartID: in.ChartID,
		OnSaleAt: in.OnSaleAt, SalesEndAt: in.SalesEndAt, HoldTTLSeconds: in.HoldTTL, MaxHoldsPerBuyer: in.MaxHoldsPerBuyer,
		HoldExtensionSeconds: in.HoldExtension, OrphanRule: in.OrphanRule, AccessibleReleaseAt: in.AccessibleReleaseAt, Status: in.Status}
	if in.Prices != nil {
		out.Prices = make([]store.Price, len(*in.Prices))
		for i, p := range *in.Prices {
			out.Prices[i] = store.Price{Category: p.Category, PriceMinor: p.PriceMinor, Currency: p.Currency}
		}
	}
	return out
}

// createEvent makes a draft event from a chart (organizer).
func (s *Server) createEvent(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	var in eventInput
	if err := s.dec.JSON(w, r, &in); err != nil {
		return err
	}
	e, err := s.deps.Events.Create(r.Context(), a, in.core())
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/events/"+e.ID.String())
	httpx.WriteJSON(w, http.StatusCreated, eventView(e))
	return nil
}

// updateEvent changes an event's fields or status (organizer).
func (s *Server) updateEvent(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	var in eventInput
	if err := s.dec.JSON(w, r, &in); err != nil {
		return err
	}
	e, err := s.deps.Events.Update(r.Context(), a, id, in.core())
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, eventView(e))
	return nil
}

// deleteEvent deletes a draft nobody acted on (204); any other event is
// a conflict and stays as it is.
func (s *Server) deleteEvent(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	if err := s.deps.Events.Delete(r.Context(), a, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type seatJSON struct {
	ID         uuid.UUID        `json:"id"`
	Section    string           `json:"section"`
	Row        string           `json:"row"`
	Number     int              `json:"number"`
	Status     store.SeatStatus `json:"status"`
	Version    int64            `json:"version"`
	X          int              `json:"x"`
	Y          int              `json:"y"`
	Category   string           `json:"category,omitempty"`
	PriceMinor *int64           `json:"price_minor,omitempty"`
	Currency   string           `json:"currency,omitempty"`
	Accessible bool             `json:"accessible"`
	Companion  bool             `json:"companion"`
}

// listSeats answers every seat of an event from the hot cache.
func (s *Server) listSeats(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	if e, err := s.deps.Events.Settings(r.Context(), a, event); err != nil {
		return err
	} else if query.Hidden(a, e) {
		return query.ErrNoEvent
	}
	secs, seats, err := s.deps.Events.Seats(r.Context(), a, event)
	if err != nil {
		return err
	}
	prices, err := s.deps.Events.Prices(r.Context(), a, event)
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
			Status: st.Status, Version: st.Version, X: st.X, Y: st.Y, Category: st.Category,
			Accessible: st.Accessible, Companion: st.Companion}
		if c, ok := prices[st.Category]; ok && st.Category != "" {
			out[i].PriceMinor, out[i].Currency = &c.PriceMinor, c.Currency
		}
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"seats": out})
	return nil
}
