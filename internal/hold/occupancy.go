package hold

// An event's occupancy: its counts in total, per section and per price
// category, live from the hot cache, with revenue as paid, or recomputed
// from Postgres.

import (
	"context"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/chart"
	"seatd/internal/store"
)

// SectionOccupancy is one section's counts.
type SectionOccupancy struct {
	ID    uuid.UUID
	Label string
	Name  string
	// Standing marks a general-admission section: its counts are places.
	Standing bool
	store.Counts
}

// CategoryOccupancy is one price category's counts and revenue: held at
// the category's current price (what those holds would be paid now), sold
// as paid (PaidOccupancy only; the cache does not know what was paid).
type CategoryOccupancy struct {
	store.Category
	store.Counts
	RevenueSold, RevenueHeld int64
	// RevenueSoldOther is what was paid in other currencies than the
	// category's current one (its currency was changed after sales).
	RevenueSoldOther map[string]int64
}

// Occupancy is an event's counts, in total, per section and per category.
type Occupancy struct {
	store.Counts
	Sections   []SectionOccupancy
	Categories []CategoryOccupancy
}

// withCategories adds the counts per category (chart order, then seats
// without a category, if any) to o.
func withCategories(o Occupancy, cats []store.Category, counts map[string]store.Counts) Occupancy {
	for _, c := range cats {
		n := counts[c.Key]
		o.Categories = append(o.Categories, CategoryOccupancy{Category: c, Counts: n, RevenueHeld: int64(n.Held) * c.PriceMinor})
	}
	if n, ok := counts[""]; ok && len(cats) > 0 && n.Total() > 0 {
		o.Categories = append(o.Categories, CategoryOccupancy{Counts: n})
	}
	return o
}

func occupancyOf(secs []store.Section, counts []store.Counts) Occupancy {
	var o Occupancy
	for i, sec := range secs {
		c := counts[i]
		o.Available += c.Available
		o.Held += c.Held
		o.Sold += c.Sold
		o.Blocked += c.Blocked
		o.Sections = append(o.Sections, SectionOccupancy{ID: sec.ID, Label: sec.Label, Name: sec.Name, Standing: sec.Kind == chart.GA, Counts: c})
	}
	return o
}

// Occupancy returns the live counts from this process's hot cache, which
// deltas keep current; staff only.
func (mo *Monitor) Occupancy(ctx context.Context, a Actor, event uuid.UUID) (Occupancy, error) {
	if !a.Staff() {
		return Occupancy{}, apperr.E(apperr.Forbidden, "only staff can see occupancy")
	}
	ev, err := mo.e.event(ctx, a.Org, event)
	if err != nil {
		return Occupancy{}, err
	}
	return withCategories(occupancyOf(ev.occupancy()), ev.settings.Load().Categories, ev.categoryCounts()), nil
}

// PaidOccupancy is Occupancy with each category's sold revenue as the
// live tickets were paid, read from Postgres, not at the category's price
// today (a price changed during the sale). The counts are the cache's: a
// sale committed between the two reads is in one and not yet the other,
// and the next read has both.
func (mo *Monitor) PaidOccupancy(ctx context.Context, a Actor, event uuid.UUID) (Occupancy, error) {
	o, err := mo.Occupancy(ctx, a, event)
	if err != nil {
		return o, err
	}
	paid, err := mo.e.store.Events.PaidRevenue(ctx, a.Org, event)
	if err != nil {
		return Occupancy{}, err
	}
	for i := range o.Categories {
		c := &o.Categories[i]
		for cur, n := range paid[c.Key] {
			if cur == c.Currency {
				c.RevenueSold = n
				continue
			}
			if c.RevenueSoldOther == nil {
				c.RevenueSoldOther = map[string]int64{}
			}
			c.RevenueSoldOther[cur] = n
		}
	}
	return o, nil
}

// RecomputeOccupancy aggregates the counts from Postgres, per section and
// per price category (the check the live counters are verified against).
func (mo *Monitor) RecomputeOccupancy(ctx context.Context, a Actor, event uuid.UUID) (Occupancy, error) {
	if !a.Staff() {
		return Occupancy{}, apperr.E(apperr.Forbidden, "only staff can see occupancy")
	}
	ev, err := mo.e.event(ctx, a.Org, event)
	if err != nil {
		return Occupancy{}, err
	}
	bySection, byCategory, err := mo.e.store.Events.Occupancy(ctx, a.Org, event)
	if err != nil {
		return Occupancy{}, err
	}
	secs, _ := ev.occupancy()
	counts := make([]store.Counts, len(secs))
	for i, sec := range secs {
		counts[i] = bySection[sec.ID]
	}
	return withCategories(occupancyOf(secs, counts), ev.settings.Load().Categories, byCategory), nil
}
