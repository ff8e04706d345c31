package hold

import (
	"context"
	"fmt"
	"time"

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
func (s *Service) Occupancy(ctx context.Context, a Actor, event uuid.UUID) (Occupancy, error) {
	if !a.Staff() {
		return Occupancy{}, apperr.E(apperr.Forbidden, "only staff can see occupancy")
	}
	ev, err := s.event(ctx, a.Org, event)
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
func (s *Service) PaidOccupancy(ctx context.Context, a Actor, event uuid.UUID) (Occupancy, error) {
	o, err := s.Occupancy(ctx, a, event)
	if err != nil {
		return o, err
	}
	paid, err := s.store.Events.PaidRevenue(ctx, a.Org, event)
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
func (s *Service) RecomputeOccupancy(ctx context.Context, a Actor, event uuid.UUID) (Occupancy, error) {
	if !a.Staff() {
		return Occupancy{}, apperr.E(apperr.Forbidden, "only staff can see occupancy")
	}
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return Occupancy{}, err
	}
	bySection, byCategory, err := s.store.Events.Occupancy(ctx, a.Org, event)
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

// Registry is the agreement of the three tiers about an event's holds.
type Registry struct {
	HotCache   int    `json:"hot_cache"`
	Redis      int    `json:"redis"`
	Postgres   int    `json:"postgres"`
	Consistent bool   `json:"consistent"`
	Breaker    string `json:"breaker"`
	RedisError string `json:"redis_error,omitempty"`
	// Mismatches names a few seats the tiers disagree on, and how.
	Mismatches []string `json:"mismatches,omitempty"`
	// GA counts each general-admission section's held places in each
	// tier: places are interchangeable, so what a buyer sees is the count.
	GA []RegistryGA `json:"ga,omitempty"`
}

// RegistryGA is one GA section's held places in each tier.
type RegistryGA struct {
	Section  string `json:"section"`
	Capacity int    `json:"capacity"`
	HotCache int    `json:"hot_cache"`
	Redis    int    `json:"redis"`
	Postgres int    `json:"postgres"`
}

// mismatch records a disagreement, keeping only the first few.
func (r *Registry) mismatch(format string, args ...any) {
	if len(r.Mismatches) < 5 {
		r.Mismatches = append(r.Mismatches, fmt.Sprintf(format, args...))
	}
}

// RegistryStatus counts the active holds of an event in each tier
// (organizers only). Consistent means Redis holds exactly the seats
// Postgres does, apart from locks young enough to belong to a hold still
// being written, and the hot cache agrees.
func (s *Service) RegistryStatus(ctx context.Context, a Actor, event uuid.UUID) (Registry, error) {
	if a.Role != RoleOrganizer {
		return Registry{}, apperr.E(apperr.Forbidden, "only organizers can see registry health")
	}
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return Registry{}, err
	}
	r := Registry{HotCache: ev.heldCount(), Breaker: s.BreakerState()}
	active, err := s.store.Holds.OfEvent(ctx, a.Org, event)
	if err != nil {
		return Registry{}, err
	}
	r.Postgres = len(active)
	secs, counts := ev.occupancy()
	gaAt := map[uuid.UUID]int{} // GA section id -> index in r.GA
	for i, sec := range secs {
		if sec.Kind == chart.GA {
			gaAt[sec.ID] = len(r.GA)
			r.GA = append(r.GA, RegistryGA{Section: sec.Label, Capacity: sec.Capacity, HotCache: counts[i].Held})
		}
	}
	// gaCount adds a held place to a tier's count of its GA section.
	gaCount := func(seat uuid.UUID, tier func(*RegistryGA) *int) {
		if st, ok := ev.seat(seat); ok {
			if i, ok := gaAt[st.SectionID]; ok {
				*tier(&r.GA[i])++
			}
		}
	}
	for _, h := range active {
		gaCount(h.SeatID, func(g *RegistryGA) *int { return &g.Postgres })
	}
	members, err := s.locks.HeldSeats(ctx, a.Org, event)
	if err != nil {
		r.RedisError = "Redis is unavailable"
		return r, nil
	}
	r.Redis = len(members)
	inPG := make(map[string]bool, len(active))
	for _, h := range active {
		inPG[h.SeatID.String()] = true
	}
	same := true
	inRedis := make(map[string]bool, len(members))
	now := s.now()
	for _, m := range members {
		inRedis[m] = true
		id, err := uuid.Parse(m)
		if err != nil {
			same = false
			r.mismatch("redis lists %q", m)
			continue
		}
		if inPG[m] {
			gaCount(id, func(g *RegistryGA) *int { return &g.Redis })
			continue
		}
		lk, ok, err := s.locks.Get(ctx, a.Org, event, id)
		switch {
		case err != nil || !ok:
			same = false
			r.mismatch("seat %s: listed in redis without a lock (%v)", id, err)
		case now.Sub(lk.AcquiredAt) >= s.opt.StaleLockAge:
			same = false
			gaCount(id, func(g *RegistryGA) *int { return &g.Redis })
			h, herr := s.store.Holds.ByID(ctx, a.Org, lk.HoldID)
			st, _ := ev.seat(id)
			r.mismatch("seat %s: redis lock of hold %s (fence %d, taken %s ago) not active in postgres (hold %s %v created %s until %s; seat %s v%d fence %d)",
				id, lk.HoldID, lk.Fence, now.Sub(lk.AcquiredAt).Round(time.Millisecond), h.Status, herr, h.CreatedAt.Format("15:04:05.000"),
				h.HeldUntil.Format("15:04:05.000"), st.Status, st.Version, st.Fence)
		default:
			r.Redis-- // in flight: not a hold yet
		}
	}
	for m := range inPG {
		if !inRedis[m] {
			same = false
			r.mismatch("seat %s: held in postgres, not in redis", m)
		}
	}
	if r.HotCache != r.Postgres {
		r.mismatch("hot cache has %d held seats, postgres %d", r.HotCache, r.Postgres)
	}
	for _, g := range r.GA {
		if g.HotCache != g.Postgres || g.Redis != g.Postgres {
			same = false
			r.mismatch("GA section %s: hot cache holds %d places, redis %d, postgres %d", g.Section, g.HotCache, g.Redis, g.Postgres)
		}
	}
	r.Consistent = same && r.HotCache == r.Postgres
	return r, nil
}

// Reconcile syncs an event's Redis state from Postgres in full and brings
// this process's cache up to the feed's head (organizers only); other
// processes' caches follow the feed on their own.
func (s *Service) Reconcile(ctx context.Context, a Actor, event uuid.UUID) (Registry, error) {
	if a.Role != RoleOrganizer {
		return Registry{}, apperr.E(apperr.Forbidden, "only organizers can reconcile")
	}
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return Registry{}, err
	}
	s.setSynced(ev, false)
	s.follow(ctx)
	s.m.Reconciles.Inc()
	if !ev.synced.Load() && s.redis.usable() {
		return Registry{}, apperr.E(apperr.Unavailable, "Redis could not be synced; try again")
	}
	return s.RegistryStatus(ctx, a, event)
}

// RunSnapshots records the occupancy of every cached event every interval
// (the points of the organizer's chart).
func (s *Service) RunSnapshots(ctx context.Context, every time.Duration) {
	loop(ctx, every, nil, func(ctx context.Context) {
		for _, ev := range s.cachedEvents() {
			o := occupancyOf(ev.occupancy())
			if err := s.store.Events.SaveSnapshot(ctx, ev.org, ev.id, o.Counts); err != nil && ctx.Err() == nil {
				s.log.Warn("save occupancy snapshot", "event", ev.id, "err", err)
			}
		}
	})
}

// Snapshots returns an event's recorded occupancy since a time.
func (s *Service) Snapshots(ctx context.Context, a Actor, event uuid.UUID, since time.Time) ([]store.Snapshot, error) {
	if !a.Staff() {
		return nil, apperr.E(apperr.Forbidden, "only staff can see occupancy")
	}
	if _, err := s.event(ctx, a.Org, event); err != nil {
		return nil, err
	}
	return s.store.Events.Snapshots(ctx, a.Org, event, since)
}
