package hold

// The registry's health: whether the three tiers agree about an event's
// holds, and reconcile, which makes them agree again
// (docs/architecture.md#change-feed).

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/chart"
)

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
func (mo *Monitor) RegistryStatus(ctx context.Context, a Actor, event uuid.UUID) (Registry, error) {
	if a.Role != RoleOrganizer {
		return Registry{}, apperr.E(apperr.Forbidden, "only organizers can see registry health")
	}
	ev, err := mo.e.event(ctx, a.Org, event)
	if err != nil {
		return Registry{}, err
	}
	r := Registry{HotCache: ev.heldCount(), Breaker: mo.e.BreakerState()}
	active, err := mo.e.store.Holds.OfEvent(ctx, a.Org, event)
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
	members, err := mo.e.locks.HeldSeats(ctx, a.Org, event)
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
	now := mo.e.now()
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
		lk, ok, err := mo.e.locks.Get(ctx, a.Org, event, id)
		switch {
		case err != nil || !ok:
			same = false
			r.mismatch("seat %s: listed in redis without a lock (%v)", id, err)
		case now.Sub(lk.AcquiredAt) >= mo.e.opt.StaleLockAge:
			same = false
			gaCount(id, func(g *RegistryGA) *int { return &g.Redis })
			h, herr := mo.e.store.Holds.ByID(ctx, a.Org, lk.HoldID)
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
func (mo *Monitor) Reconcile(ctx context.Context, a Actor, event uuid.UUID) (Registry, error) {
	if a.Role != RoleOrganizer {
		return Registry{}, apperr.E(apperr.Forbidden, "only organizers can reconcile")
	}
	ev, err := mo.e.event(ctx, a.Org, event)
	if err != nil {
		return Registry{}, err
	}
	mo.e.setSynced(ev, false)
	mo.follower.round(ctx)
	mo.e.m.Reconciles.Inc()
	if !ev.synced.Load() && mo.e.redis.usable() {
		return Registry{}, apperr.E(apperr.Unavailable, "Redis could not be synced; try again")
	}
	return mo.RegistryStatus(ctx, a, event)
}
