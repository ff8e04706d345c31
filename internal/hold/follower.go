package hold

// The change-feed follower: the one way this process's replicas of
// Postgres — the hot caches and Redis's locks — catch up with what
// committed (docs/architecture.md#change-feed).

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"seatd/internal/store"
)

// Follower reads the change feed of every cached event from its cursor
// and applies it to the cache and to Redis; it also evicts idle events
// and has the warmer reload pinned ones.
type Follower struct {
	e      *Engine
	warmer *Warmer
	// mu makes rounds one at a time.
	mu sync.Mutex
}

// NewFollower builds the follower of the engine's caches; events warmer
// pins are never evicted for being idle.
func NewFollower(e *Engine, warmer *Warmer) *Follower { return &Follower{e: e, warmer: warmer} }

// Run keeps this process's replicas of Postgres — the hot caches
// and, while Redis is usable, Redis's locks — in line with Postgres's
// change feed. It is the one recovery mechanism: live deltas are only the
// fast way to hear of a change, and whatever goes wrong with them (a
// process killed between commit and publish, a message dropped, a
// resubscribe, Redis cut off, a write whose reply was lost) the next round
// reads every committed change since the cursor, once — except a seat
// whose last change is a hold this process made on the fast path (its
// cache and Redis have it: see eventState.known). A round runs every
// Options.FeedEvery, and at once when something asks for it (a
// resubscribe, a new event, a reconcile, a hold that found Redis
// unsynced).
//
// With no event cached (nor pinned) there is no feed to read: the
// follower then sleeps until something asks for a round (loading an event
// does, and the new event starts from the snapshot it was loaded at),
// waking every Options.FeedEvery only while the Redis breaker is not
// closed, to notice Redis is back.
func (f *Follower) Run(ctx context.Context) {
	every := f.e.opt.FeedEvery
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-f.e.kick:
		}
		if f.round(ctx) || !f.e.redis.usable() {
			t.Reset(every)
		}
	}
}

// round is one round: evict idle events, read the feed of every cached
// event from its cursor and apply it, then bring Redis in line. It
// reports whether any event is cached or pinned (idle otherwise).
func (f *Follower) round(ctx context.Context) (busy bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Whatever the round does, it serves the catch-ups asked before it
	// reads the feed (Engine.catchUp).
	asked := f.e.caught.begin()
	defer f.e.caught.serve(asked)
	f.e.m.FeedRounds.Inc()
	now := f.e.now()
	var evs []*eventState
	for _, ev := range f.e.cachedEvents() {
		if now.Sub(time.Unix(0, ev.used.Load())) > f.e.opt.CacheIdle && !ev.watched() && !f.warmer.pinnedAt(ev, now) {
			f.e.evict(ev)
			continue
		}
		evs = append(evs, ev)
	}
	if len(evs) > 0 {
		evs = f.reloadSettings(ctx, evs)
	}
	pinned := f.warmer.rewarm()
	if len(evs) == 0 {
		f.probeRedis(ctx)
		return pinned
	}
	reads := make([]store.FeedRead, len(evs))
	taken := make([][]uuid.UUID, len(evs))
	var known []uuid.UUID
	for i, ev := range evs {
		reads[i] = store.FeedRead{Org: ev.org, Event: ev.id, From: ev.at}
		// Taken before the read's snapshot, so each was committed before it.
		taken[i] = ev.known.take()
		known = append(known, taken[i]...)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	changes, at, err := f.e.store.Feed.Changes(rctx, reads, known)
	cancel()
	if err != nil {
		for i, ev := range evs {
			ev.known.add(taken[i]...)
		}
		if ctx.Err() == nil {
			f.e.log.Warn("read change feed", "events", len(evs), "err", err)
			f.e.m.BackgroundErrors.WithLabelValues("feed").Inc()
		}
		return true
	}
	usedRedis := false
	for i, ev := range evs {
		ev.at = at
		cs := changes[i].Changes
		if len(cs) > 0 {
			f.e.m.FeedChanges.Add(float64(len(cs)))
			ds := make([]Delta, len(cs))
			for j, c := range cs {
				ds[j] = changeDelta(ev.org, ev.id, c, now)
			}
			applied := ev.apply(ds)
			f.e.m.FeedApplied.Add(float64(len(applied)))
			ev.notify(applied)
			if users := offersChanged(cs, applied); len(users) > 0 {
				// An offer's seats changed (offered, bought, released,
				// expired) and this process had not heard (the message was
				// lost): its buyer's panels show what became of it.
				ev.notifyLine(WaitlistChange{Users: users})
			}
		}
		if c, ok := lineChange(changes[i].Line); ok {
			// The line's changes are told whether or not their messages
			// came (a waitlist has no state here to tell them apart by):
			// at most once a round, and the panels' pump takes a burst of
			// changes in one render anyway.
			ev.notifyLine(c)
		}
		switch {
		case f.e.redis.usable():
			usedRedis = f.syncRedis(ctx, ev, cs) || usedRedis
		case len(cs) > 0:
			// Redis did not get these changes.
			f.e.setSynced(ev, false)
		}
	}
	if !usedRedis {
		f.probeRedis(ctx)
	}
	return true
}

// offersChanged lists the buyers of the waitlist offers whose seats'
// changes among cs were new to this process (applied).
func offersChanged(cs []store.Change, applied []Delta) []uuid.UUID {
	buyer := map[uuid.UUID]uuid.UUID{} // seat → its offer's buyer
	for _, c := range cs {
		if c.Offer {
			buyer[c.Seat.ID] = c.Holder
		}
	}
	var users []uuid.UUID
	for _, d := range applied {
		if u, ok := buyer[d.Seat]; ok && !slices.Contains(users, u) {
			users = append(users, u)
		}
	}
	return users
}

// lineChange is the change of a waitlist that the feed's line changes ls
// make together: whose entries changed, and whether the line moved (an
// entry left it or was offered seats; a join moves no one else).
func lineChange(ls []store.LineChange) (WaitlistChange, bool) {
	var c WaitlistChange
	for _, l := range ls {
		if !slices.Contains(c.Users, l.User) {
			c.Users = append(c.Users, l.User)
		}
		c.Line = c.Line || l.Action != store.ActionWaitlistJoined
	}
	return c, len(ls) > 0
}

// changeDelta is the delta of a change read from the feed.
func changeDelta(org, event uuid.UUID, c store.Change, now time.Time) Delta {
	d := seatDelta(org, event, &c.Seat, kindOf(c.Action), now)
	d.Actor = c.Actor
	if c.Seat.Status != store.Held {
		d.PrevUser = c.Holder
	}
	return d
}

func kindOf(action string) string {
	switch action {
	case "hold.created":
		return KindHeld
	case store.ActionWaitlistOffered:
		return KindOffered
	case "hold.released":
		return KindReleased
	case "hold.expired":
		return KindExpired
	case "hold.extended":
		return KindExtended
	case "seat.sold":
		return KindSold
	case "seat.blocked":
		return KindBlocked
	case "seat.unblocked":
		return KindUnblocked
	case "booking.cancelled":
		return KindCancelled
	}
	return KindSync
}

// reloadSettings reads the settings of the cached events (status, sales
// window, hold TTL and cap) once a round, in one statement: an event
// changed by another process reaches this one's holds within a round, or
// at once when its message arrives (it wakes the follower), and a lost
// message costs nothing but that round. A change made on this process
// while the read ran is newer than the read and is kept. An event the
// read no longer finds was deleted: it is evicted. It returns the events
// still cached.
func (f *Follower) reloadSettings(ctx context.Context, evs []*eventState) []*eventState {
	orgs, ids := make([]uuid.UUID, len(evs)), make([]uuid.UUID, len(evs))
	prev := make([]*store.Event, len(evs))
	for i, ev := range evs {
		orgs[i], ids[i], prev[i] = ev.org, ev.id, ev.settings.Load()
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := f.e.store.Events.ByKey(rctx, orgs, ids)
	if err != nil {
		if ctx.Err() == nil {
			f.e.log.Warn("reload event settings", "events", len(evs), "err", err)
			f.e.m.BackgroundErrors.WithLabelValues("settings").Inc()
		}
		return evs
	}
	found := make(map[[2]uuid.UUID]store.Event, len(got))
	for _, e := range got {
		found[[2]uuid.UUID{e.OrgID, e.ID}] = e
	}
	kept := evs[:0]
	for i, ev := range evs {
		e, ok := found[[2]uuid.UUID{ev.org, ev.id}]
		if !ok {
			f.e.evict(ev)
			continue
		}
		// A change made here while the read ran is newer than it: kept.
		ev.setSettingsSince(e, prev[i])
		kept = append(kept, ev)
	}
	return kept
}
