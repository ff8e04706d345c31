package api

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
)

// OccupancyCore counts an event's seats with the revenue of its
// categories; *hold.Monitor satisfies it.
type OccupancyCore interface {
	PaidOccupancy(ctx context.Context, a hold.Actor, event uuid.UUID) (hold.Occupancy, error)
}

// RegistryChecks checks and reconciles an event's registry, boundedly;
// *RegistryFlights satisfies it.
type RegistryChecks interface {
	Status(ctx context.Context, a hold.Actor, event uuid.UUID) (hold.Registry, time.Time, error)
	Reconciled(ctx context.Context, a hold.Actor, event uuid.UUID) (hold.Registry, time.Time, error)
}

// Registry answers an event's occupancy (staff), and how the hot cache,
// Redis and Postgres agree on its holds, with the reconcile that makes
// them agree (organizer).
type Registry struct {
	dec       *httpx.Decoder
	occupancy OccupancyCore
	checks    RegistryChecks
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

// OccupancyJSON is an event's live counts as the API answers them.
type OccupancyJSON struct {
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

// Occupancy answers an event's live counts (staff).
func (h *Registry) Occupancy(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	o, err := h.occupancy.PaidOccupancy(r.Context(), a, event)
	if err != nil {
		return err
	}
	total := o.Total()
	out := OccupancyJSON{
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

// registryJSON is a registry answer with the time it was taken: within
// the cooldown (see RegistryFlights) callers get the same answer again.
type registryJSON struct {
	hold.Registry
	CheckedAt time.Time `json:"checked_at"`
}

// Status answers how the three tiers agree about an event's holds.
func (h *Registry) Status(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	reg, at, err := h.checks.Status(r.Context(), a, event)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, registryJSON{Registry: reg, CheckedAt: at.UTC()})
	return nil
}

// Reconcile rebuilds Redis and the hot caches from Postgres. A reconcile
// asked for within the cooldown of the last one is not run again: it is
// answered with the last one's result, and checked_at says when that was.
func (h *Registry) Reconcile(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := idAndNoInput(h.dec, w, r, "event")
	if err != nil {
		return err
	}
	reg, at, err := h.checks.Reconciled(r.Context(), a, event)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, registryJSON{Registry: reg, CheckedAt: at.UTC()})
	return nil
}
