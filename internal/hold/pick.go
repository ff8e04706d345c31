package hold

// Picking seats for a request that does not name them: the best seats
// available (blocks.go finds them) and places of a standing section; each
// pick is held through holdSeats, and the next one tried when others took
// it first (docs/architecture.md#choosing-seats).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/chart"
	"seatd/internal/store"
)

// bestAttempts bounds how many blocks one request tries when others take
// them first.
const bestAttempts = 8

// bestSpread is how many of the best blocks a request picks among at its
// first try (when as many requests are in flight here).
const bestSpread = 4

// best holds the best Count seats available, all or none, through the
// same path as named seats. Best means: Count seats side by side in one
// row if any row has them — the frontmost such row (the chart lists rows
// from the stage back), then the block nearest the row's centre; else the
// fewest rows, longest runs first. Under the strict orphan rule no block
// that would leave a seat alone is offered. When another buyer takes a
// block first it tries the next one (bounded), choosing at random among
// more of the best blocks each time so a crowd spreads out instead of all
// retrying the same block.
func (h *Holds) best(ctx context.Context, a Actor, r Request) (Result, error) {
	ev, err := h.bestEvent(ctx, a, r)
	if err != nil {
		return Result{}, err
	}
	hold := func(pick []uuid.UUID) (Result, error) {
		return h.observe(a, r.Event, func() (Result, string, error) { return h.holdSeats(ctx, a, r, pick) })
	}
	if r.Customer != nil {
		// Staff place any seat by hand, so the orphan rule and the
		// accessible hold-back do not bind them; seats chosen for a
		// customer are chosen by the buyer's rules. Staff ask one at a
		// time: the best block rather than a crowd's spread.
		chooser := a
		chooser.Role = RoleBuyer
		return h.pickAndHold(ev, chooser, r, 1, hold)
	}
	crowd := int(ev.bestInFlight.Add(1))
	defer ev.bestInFlight.Add(-1)
	if !h.e.fast(ev) {
		return h.observe(a, r.Event, func() (Result, string, error) {
			res, err := h.bestPostgres(ctx, ev, a, r, crowd)
			return res, "fallback", err
		})
	}
	// A crowd asking at once would all pick the one best block. On this
	// process it does not: a pick is claimed until its hold returns, and
	// claimed seats are taken to the picks after it. Across processes,
	// each picks at random among as many of the best blocks as there are
	// requests in flight here (up to bestSpread; twice as many on each
	// retry), so best is exact for a lone buyer and crowds on several
	// processes spread over the next best blocks instead of colliding.
	return h.pickAndHold(ev, a, r, crowd, hold)
}

// bestEvent checks a best-available request's count and filters and
// returns its event.
func (h *Holds) bestEvent(ctx context.Context, a Actor, r Request) (*eventState, error) {
	b, most := r.Best, h.e.opt.MaxSeatsPerRequest
	if b.Count < 1 || b.Count > most {
		return nil, &apperr.Error{Code: apperr.Invalid,
			Message: fmt.Sprintf("ask for between 1 and %d seats", most),
			Fields:  map[string]string{"best_available.count": fmt.Sprintf("must be 1 to %d", most)}}
	}
	ev, err := h.e.event(ctx, a.Org, r.Event)
	if err != nil {
		return nil, err
	}
	if b.Category != "" && catIndex(ev.settings.Load().Categories, b.Category) == 0 {
		return nil, &apperr.Error{Code: apperr.Invalid, Message: "this event has no such category",
			Fields: map[string]string{"best_available.category": "is not a category of this event"}}
	}
	if b.Section != "" {
		ev.mu.RLock()
		ok := slices.ContainsFunc(ev.sections, func(x store.Section) bool { return x.Label == b.Section })
		ev.mu.RUnlock()
		if !ok {
			return nil, &apperr.Error{Code: apperr.Invalid, Message: "this event has no such section",
				Fields: map[string]string{"best_available.section": "is not a section of this event"}}
		}
	}
	return ev, nil
}

// pickAndHold picks blocks for chooser (whose rules they keep), claimed
// on this process while hold holds them, until one is held; a block
// another buyer took first, or that would now leave a seat alone, is left
// out and the next tried, bestAttempts times at most.
func (h *Holds) pickAndHold(ev *eventState, chooser Actor, r Request, crowd int, hold func(pick []uuid.UUID) (Result, error)) (Result, error) {
	avoid := map[uuid.UUID]bool{}
	looked := false
	var last error
	for attempt := 0; attempt < bestAttempts; attempt++ {
		// A few of the best blocks at first, twice as many on each retry:
		// picks on this process never collide (claims), so the spread is
		// only for crowds on other processes.
		want := min(crowd, bestSpread) << attempt
		pick := claimBest(ev, chooser, r, avoid, want, &looked, h.e.now())
		if pick == nil {
			break
		}
		res, err := hold(pick)
		// The cache has the hold by now (or the refusal's cause is
		// avoided below): the claim has done its work.
		ev.unclaim(pick)
		switch apperr.CodeOf(err) {
		case apperr.SeatTaken, apperr.OrphanSeat:
			for _, id := range pick {
				avoid[id] = true
			}
			last = err
			continue
		}
		return res, err
	}
	return Result{}, notEnough(r.Best.Count, last != nil)
}

// claimBest picks a block among the want best ones not avoided nor
// claimed by another request of this process, and claims it. It returns
// nil when there is none.
func claimBest(ev *eventState, a Actor, r Request, avoid map[uuid.UUID]bool, want int, looked *bool, now time.Time) []uuid.UUID {
	ev.claimMu.Lock()
	defer ev.claimMu.Unlock()
	// The cache stays read-locked while rows are scanned, in place:
	// copying rows for every request of a crowd costs more CPU than the
	// holds themselves.
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	blocks := bestBlocks(ev, a, r, avoid, want, now)
	if len(blocks) == 0 && len(avoid) > 0 && !*looked {
		// A refused block's seats are all avoided, but only some of them
		// were taken (or none: an orphan refusal): the rest may be needed
		// for a block now. Look once more with none avoided; the cache has
		// the holds that refused us by now.
		*looked = true
		clear(avoid)
		blocks = bestBlocks(ev, a, r, avoid, want, now)
	}
	if len(blocks) == 0 {
		return nil
	}
	pick := blocks[rand.IntN(min(len(blocks), want))] // #nosec G404 -- spreading load, not security
	ev.claim(pick)
	return pick
}

// notEnough is the refusal of a best-available request without a block;
// contended says others took the blocks it tried.
func notEnough(count int, contended bool) error {
	e := &apperr.Error{Code: apperr.NotEnoughSeats, Message: fmt.Sprintf("there are not %d seats available together", count)}
	if contended {
		e.Message = fmt.Sprintf("the %d best seats were taken by others as we tried; try again", count)
	}
	return e
}

// ga holds count places of the event's GA section labelled section: one
// hold per place, all or none, through the same path as seats (cap,
// sales window, TTL, Redis then Postgres).
//
// Places are interchangeable, so the request picks count places that look
// free in the hot cache, starting at a random place of the section: many
// buyers of one section at once pick different rows rather than queueing
// on one counter. When some of its picks were taken meanwhile (Redis or
// Postgres refuses them), it picks others: a race among buyers is settled
// here, not handed back as "try again". A refused place the cache still
// shows free means the cache lags (another process's holds have not
// reached it): before picking again the request waits for the follower
// to catch up (Engine.catchUp), so its next picks are among the places
// really left. Before calling the section sold out it looks once more at
// the places it was refused, in case one came free meanwhile. The cache
// only chooses; Redis and Postgres grant, so a lagging cache (or no
// Redis) can cost a retry but never oversell.
//
// 409 sold_out when fewer than count places are left. After gaRounds
// refusals (a cache that does not catch up, or a crowd that keeps winning
// the same places), 503 unavailable with Retry-After (gaBusy).
func (h *Holds) ga(ctx context.Context, a Actor, r Request) (Result, error) {
	section, count, most := r.GA.Section, r.GA.Count, h.e.opt.MaxSeatsPerRequest
	if count < 1 || count > most {
		return Result{}, &apperr.Error{Code: apperr.Invalid,
			Message: fmt.Sprintf("hold between 1 and %d places at once", most),
			Fields:  map[string]string{"ga.count": fmt.Sprintf("must be 1 to %d", most)}}
	}
	ev, err := h.e.event(ctx, a.Org, r.Event)
	if err != nil {
		return Result{}, err
	}
	secID, ok := ev.gaSection(section)
	if !ok {
		return Result{}, &apperr.Error{Code: apperr.NotFound, Message: fmt.Sprintf("no general-admission section %q in this event", section)}
	}
	refused, relooked := map[uuid.UUID]bool{}, false
	for rounds := 0; ; rounds++ {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		ids := ev.pickPlaces(secID, count, refused)
		if len(ids) < count {
			if relooked || len(refused) == 0 {
				return Result{}, soldOut(section, len(ids))
			}
			relooked = true
			clear(refused)
			ids = ev.pickPlaces(secID, count, refused)
			if len(ids) < count {
				return Result{}, soldOut(section, len(ids))
			}
		}
		if rounds == gaRounds {
			return Result{}, gaBusy(section)
		}
		res, err := h.observe(a, r.Event, func() (Result, string, error) { return h.holdSeats(ctx, a, r, ids) })
		var e *apperr.Error
		if apperr.CodeOf(err) != apperr.SeatTaken || !errors.As(err, &e) {
			return res, err
		}
		var fresh []uuid.UUID
		for _, id := range e.Seats {
			if u, err := uuid.Parse(id); err == nil && !refused[u] {
				refused[u] = true
				fresh = append(fresh, u)
			}
		}
		if len(fresh) == 0 {
			// A refusal that names no new place cannot be settled by
			// picking others.
			return res, err
		}
		if ev.showsAvailable(fresh) {
			h.e.catchUp(ctx, gaCatchUpWait)
		}
	}
}

// gaRounds bounds the holds one GA request sends: on a big section with a
// lagging cache, picking again after each refusal could otherwise cost a
// round trip per place. Eight rounds settle any race the catch-up between
// them leaves.
const gaRounds = 8

// gaCatchUpWait bounds a GA request's wait for the follower between two
// rounds: about one round of the follower's own pace (the feed interval).
const gaCatchUpWait = 250 * time.Millisecond

// gaBusy is the answer of a GA request refused gaRounds times while the
// cache still showed places free: 503 unavailable, try again in a second.
// Not seat_taken: the buyer named no place, and none of the places the
// request tried is a verdict on the section, which still has places; the
// server could not settle the race in time, as when a row lock times out
// (web/httpx's busy), and clients retry a 503 with Retry-After.
func gaBusy(section string) error {
	return retryLater{err: apperr.E(apperr.Unavailable,
		"the places of section %s are going fast and we could not settle them in time; please try again in a moment", section),
		after: 1}
}

// retryLater is a domain error that says when to try again (Retry-After).
type retryLater struct {
	err   *apperr.Error
	after int // seconds
}

func (e retryLater) Error() string { return e.err.Error() }

// Unwrap makes apperr.CodeOf and errors.As find the domain error.
func (e retryLater) Unwrap() error { return e.err }

// RetryAfter says when to try again, in seconds (web/httpx sets the
// Retry-After header from it).
func (e retryLater) RetryAfter() int { return e.after }

func soldOut(section string, left int) error {
	if left == 0 {
		return &apperr.Error{Code: apperr.SoldOut, Message: fmt.Sprintf("section %s is sold out", section)}
	}
	return &apperr.Error{Code: apperr.SoldOut, Message: fmt.Sprintf("section %s has only %d places left", section, left)}
}

// gaSection finds a GA section by label.
func (e *eventState) gaSection(label string) (uuid.UUID, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, sec := range e.sections {
		if sec.Label == label && sec.Kind == chart.GA {
			return sec.ID, true
		}
	}
	return uuid.Nil, false
}

// showsAvailable reports whether the cache shows any of ids available.
func (e *eventState) showsAvailable(ids []uuid.UUID) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, id := range ids {
		if st, ok := e.lookup(id); ok && st.Status == store.Available {
			return true
		}
	}
	return false
}

// pickPlaces returns up to count available places of the section (not
// refused to this request already), scanning from a random place. A place
// whose hold expired but is not reaped yet is not available: the reaper
// returns it.
func (e *eventState) pickPlaces(section uuid.UUID, count int, refused map[uuid.UUID]bool) []uuid.UUID {
	e.mu.RLock()
	defer e.mu.RUnlock()
	places := e.places[section]
	if len(places) == 0 {
		return nil
	}
	start := rand.IntN(len(places)) // #nosec G404 -- spreading buyers over rows, not a secret
	var out []uuid.UUID
	for i := range places {
		p := places[(start+i)%len(places)]
		if p.Status == store.Available && !refused[p.ID] {
			out = append(out, p.ID)
			if len(out) == count {
				break
			}
		}
	}
	return out
}
