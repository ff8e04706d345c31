package hold

// Best available on the Postgres-only path, while Redis cannot be used:
// the pick, its row locks and the hold in one transaction.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"

	"seatd/internal/store"
)

// bestPostgres is best available while Redis cannot be used: the
// pick, its row locks and the hold in one Postgres transaction
// (store.Holds.Best), so a crowd passes over blocks others are taking
// (SKIP LOCKED) instead of being refused and asking again. Picks are
// claimed on this process as on the fast path, so its own crowd does not
// even meet in Postgres.
func (h *Holds) bestPostgres(ctx context.Context, ev *eventState, a Actor, r Request, crowd int) (Result, error) {
	b := r.Best
	if err := canHold(a); err != nil {
		return Result{}, err
	}
	now := h.e.now().Truncate(time.Millisecond)
	set := ev.settings.Load()
	if !OpenTo(set, a.Staff(), now) {
		h.e.m.HoldConflict.WithLabelValues("hot").Inc()
		return Result{}, notOnSale(set, now)
	}
	ttl, cap := h.ttlCap(set, a)
	if cap > 0 && ev.holdsOf(a.User)+b.Count > cap {
		return Result{}, holdLimit(cap)
	}
	h.e.m.RedisFallback.Inc()
	// Claims end once the cache has the holds, not after they are
	// published: without Redis a publish waits for a Postgres connection.
	var claims []uuid.UUID
	unclaim := sync.OnceFunc(func() { ev.unclaim(claims) })
	defer unclaim()
	var wait, busy bool
	p := store.BestParams{
		HoldParams: store.HoldParams{Org: a.Org, Event: ev.id, User: a.User, Now: now, HeldUntil: now.Add(ttl),
			Source: r.Source, Cap: cap, Staff: a.Staff(), Strict: set.OrphanRule == "strict" && !a.Staff(), Request: requestOf(ctx)},
		Fence: ev.fence() + 1, Section: b.Section, Tries: bestAttempts,
		Pick: func(seats []store.Seat, avoid map[uuid.UUID]bool, final bool, try int) ([]uuid.UUID, bool) {
			want := min(crowd, 64) << try
			ev.claimMu.Lock()
			defer ev.claimMu.Unlock()
			// The rows were read before others of this process committed
			// holds and ended their claims: the cache has those holds.
			ev.mu.RLock()
			defer ev.mu.RUnlock()
			taken := func(id uuid.UUID) bool {
				st, ok := ev.lookup(id)
				return ok && st.Status != store.Available
			}
			blocks, w := finder(ev, a, r, seats, rowsOf(seats, nil), avoid, taken, h.e.now()).findFree(ev, b.Section, want, final, busy)
			if len(blocks) < want && !final {
				return nil, true
			}
			if len(blocks) == 0 {
				// Blocks only in rows held in here now: the transaction
				// ends, to wait for one without a connection.
				wait = w
				return nil, false
			}
			pick := blocks[rand.IntN(min(len(blocks), want))] // #nosec G404 -- spreading load, not security
			ev.claim(pick)
			claims = append(claims, pick...)
			return pick, false
		}}
	deadline := h.e.now().Add(maxRowWait)
	var out store.BestOutcome
	for {
		wait = false
		h.e.m.PGHoldWrites.Inc()
		var err error
		out, err = h.e.store.Holds.Best(context.WithoutCancel(ctx), p)
		if err != nil {
			return Result{}, h.refusal(ev, fmt.Errorf("best available (postgres): %w", err), cap, now)
		}
		if !wait || len(out.Created) > 0 {
			break
		}
		busy = !ev.waitRow(ctx, deadline)
	}
	h.e.m.HoldConflict.WithLabelValues("postgres").Add(float64(out.Skipped))
	switch {
	case out.NotOnSale:
		return Result{}, h.refusal(ev, errNotOnSale, cap, now)
	case out.None:
		return Result{}, notEnough(b.Count, out.Skipped > 0)
	}
	seats := make([]store.Seat, len(out.Seats))
	for i, id := range out.Seats {
		seats[i].ID = id
	}
	for _, h := range out.Created {
		ev.bumpFence(h.Fence)
	}
	return h.finish(ctx, ev, seats, out.HoldOutcome, a.User, func(id uuid.UUID) string { return seatLabel(ev, id) }, nil, unclaim)
}
