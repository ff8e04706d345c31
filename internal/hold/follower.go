package hold

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"seatd/internal/seatlock"
	"seatd/internal/store"
)

// RunFollower keeps this process's replicas of Postgres — the hot caches
// and, while Redis is usable, Redis's locks — in line with Postgres's
// change feed. It is the one recovery mechanism: live deltas are only the
// fast way to hear of a change, and whatever goes wrong with them (a
// process killed between commit and publish, a message dropped, a
// resubscribe, Redis cut off, a write whose reply was lost) the next round
// reads every committed change since the cursor, once — except a seat
// whose last change is a hold this process made on the fast path (its
// cache and Redis have it: see eventState.known). A round runs every
// interval, and at once when something asks for it (a resubscribe, a new
// event, a reconcile, a hold that found Redis unsynced).
//
// With no event cached (nor pinned) there is no feed to read: the
// follower then sleeps until something asks for a round (loading an event
// does, and the new event starts from the snapshot it was loaded at),
// waking every interval only while the Redis breaker is not closed, to
// notice Redis is back.
func (s *Service) RunFollower(ctx context.Context, every time.Duration) {
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
		if s.follow(ctx) || !s.redis.usable() {
			t.Reset(every)
		}
	}
}

// loop runs round every interval, and at once on each kick (nil: never),
// until ctx ends: the shape of the core's timed jobs (reaper, snapshots,
// warmer).
func loop(ctx context.Context, every time.Duration, kick <-chan struct{}, round func(context.Context)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
		round(ctx)
	}
}

// follow is one round: evict idle events, read the feed of every cached
// event from its cursor and apply it, then bring Redis in line. It
// reports whether any event is cached or pinned (idle otherwise).
func (s *Service) follow(ctx context.Context) (busy bool) {
	s.followMu.Lock()
	defer s.followMu.Unlock()
	s.m.FeedRounds.Inc()
	now := s.now()
	var evs []*eventState
	for _, ev := range s.cachedEvents() {
		if now.Sub(time.Unix(0, ev.used.Load())) > s.opt.CacheIdle && !ev.watched() && !s.pinnedAt(ev, now) {
			s.evict(ev)
			continue
		}
		evs = append(evs, ev)
	}
	if len(evs) > 0 {
		evs = s.reloadSettings(ctx, evs)
	}
	pinned := s.rewarm()
	if len(evs) == 0 {
		s.probeRedis(ctx)
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
	changes, at, err := s.store.Changes(rctx, reads, known)
	cancel()
	if err != nil {
		for i, ev := range evs {
			ev.known.add(taken[i]...)
		}
		if ctx.Err() == nil {
			s.log.Warn("read change feed", "events", len(evs), "err", err)
			s.m.BackgroundErrors.WithLabelValues("feed").Inc()
		}
		return true
	}
	usedRedis := false
	for i, ev := range evs {
		ev.at = at
		cs := changes[i].Changes
		if len(cs) > 0 {
			s.m.FeedChanges.Add(float64(len(cs)))
			ds := make([]Delta, len(cs))
			for j, c := range cs {
				ds[j] = changeDelta(ev.org, ev.id, c, now)
			}
			applied := ev.apply(ds)
			s.m.FeedApplied.Add(float64(len(applied)))
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
		case s.redis.usable():
			usedRedis = s.syncRedis(ctx, ev, cs) || usedRedis
		case len(cs) > 0:
			// Redis did not get these changes.
			s.setSynced(ev, false)
		}
	}
	if !usedRedis {
		s.probeRedis(ctx)
	}
	return true
}

// probeRedis pings Redis through the breaker, so that an idle process
// notices it was cut off, and a process whose breaker opened notices
// Redis is back.
func (s *Service) probeRedis(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, _ = call(s.redis, func() (struct{}, error) { return struct{}{}, s.locks.Ping(pctx) })
}

// syncRedis brings an event's Redis locks in line with what the round
// read: the changed seats for a synced event, everything for one that is
// not (just loaded, or Redis failed or lost it since), then the doubtful
// locks that are due. Reports whether it called Redis.
func (s *Service) syncRedis(ctx context.Context, ev *eventState, cs []store.Change) bool {
	called := false
	if !ev.synced.Load() {
		called = true
		if err := s.fullSync(ctx, ev); err != nil {
			if ctx.Err() == nil {
				s.log.Warn("sync redis from postgres", "org", ev.org, "event", ev.id, "err", err)
				s.m.BackgroundErrors.WithLabelValues("redis_sync").Inc()
			}
			return true
		}
	} else if len(cs) > 0 {
		called = true
		seats := make([]store.Seat, len(cs))
		for i := range cs {
			seats[i] = cs[i].Seat
		}
		if !s.syncSeats(ctx, ev, seats) {
			return true
		}
	}
	called = s.syncRecheck(ctx, ev) || called
	return s.dropDoubtful(ctx, ev) || called
}

// syncRecheck syncs the seats found to disagree with Postgres, and
// reports whether it called Redis.
func (s *Service) syncRecheck(ctx context.Context, ev *eventState) bool {
	ids := ev.recheck.take()
	if len(ids) == 0 || !ev.synced.Load() {
		return false // a full sync covers them
	}
	seats, err := s.store.SeatsByID(ctx, ev.org, ev.id, ids)
	if err != nil {
		ev.recheck.add(ids...)
		return false
	}
	s.syncSeats(ctx, ev, seats)
	return true
}

// syncSeats makes Redis agree with these seats as Postgres has them, and
// reports whether it could; if not, the event needs a full sync (Redis
// lost it, or did not take these changes).
func (s *Service) syncSeats(ctx context.Context, ev *eventState, seats []store.Seat) bool {
	states := make([]seatlock.SeatState, len(seats))
	var maxFence int64
	for i := range seats {
		states[i] = lockState(&seats[i])
		maxFence = max(maxFence, seats[i].Fence)
	}
	_, err := call(s.redis, func() (int, error) {
		return s.locks.Sync(ctx, ev.org, ev.id, states, maxFence, s.now(), s.opt.StaleLockAge, false)
	})
	s.m.RedisSyncs.WithLabelValues("incremental").Inc()
	if err != nil {
		s.setSynced(ev, false)
		if !errors.Is(err, seatlock.ErrNotSynced) {
			s.m.BackgroundErrors.WithLabelValues("redis_sync").Inc()
		}
		return false
	}
	return true
}

// lockState is what Redis should hold for a seat Postgres has as st.
func lockState(st *store.Seat) seatlock.SeatState {
	ls := seatlock.SeatState{ID: st.ID, Version: st.Version, Fence: st.Fence}
	if st.Status == store.Held && st.HoldID != uuid.Nil {
		ls.Lock = &seatlock.Lock{HoldID: st.HoldID, UserID: st.HolderID, Fence: st.Fence, Expires: st.HeldUntil}
	}
	return ls
}

// fullSync makes Redis agree with Postgres for a whole event: the lock of
// every held seat, none for the seats Redis has that Postgres does not
// hold (see seatlock.Sync for the rule that keeps locks in flight), and a
// fence counter above every fence used. Locks Redis has that Postgres
// does not know are checked again once they are too old to be in flight.
func (s *Service) fullSync(ctx context.Context, ev *eventState) error {
	held, maxFence, _, err := s.store.HeldState(ctx, ev.org, ev.id)
	if err != nil {
		return err
	}
	return s.fullSyncFrom(ctx, ev, held, maxFence)
}

// fullSyncFrom is fullSync from Postgres's held seats and highest fence
// read at one snapshot, such as the one an event was just loaded at (the
// second read of a 300 000-seat event would scan it again).
func (s *Service) fullSyncFrom(ctx context.Context, ev *eventState, held []store.Seat, maxFence int64) error {
	members, err := call(s.redis, func() ([]string, error) { return s.locks.HeldSeats(ctx, ev.org, ev.id) })
	if err != nil {
		return err
	}
	states := make([]seatlock.SeatState, 0, len(held)+len(members))
	inPG := make(map[uuid.UUID]bool, len(held))
	for i := range held {
		states = append(states, lockState(&held[i]))
		inPG[held[i].ID] = true
	}
	var extra []uuid.UUID
	for _, m := range members {
		if id, err := uuid.Parse(m); err == nil && !inPG[id] {
			extra = append(extra, id)
		}
	}
	if len(extra) > 0 {
		seats, err := s.store.SeatsByID(ctx, ev.org, ev.id, extra)
		if err != nil {
			return err
		}
		for i := range seats {
			states = append(states, lockState(&seats[i]))
		}
	}
	if _, err := call(s.redis, func() (int, error) {
		return s.locks.Sync(ctx, ev.org, ev.id, states, maxFence, s.now(), s.opt.StaleLockAge, true)
	}); err != nil {
		return err
	}
	s.m.RedisSyncs.WithLabelValues("full").Inc()
	s.setSynced(ev, true)
	// What Sync left alone for being newer than Postgres may be a lock
	// whose writer died: look again once no transaction can still commit it.
	for _, id := range extra {
		lk, ok, err := s.locks.Get(ctx, ev.org, ev.id, id)
		if err == nil && ok {
			ev.doubt(doubtfulLock{seat: id, hold: lk.HoldID, notBefore: lk.AcquiredAt.Add(s.opt.StaleLockAge)})
		}
	}
	return nil
}

// dropDoubtful drops the due doubtful locks whose hold Postgres does not
// have as active. A hold that commits after all (its reply was lost, and
// Postgres finished it later) comes back through the feed.
func (s *Service) dropDoubtful(ctx context.Context, ev *eventState) bool {
	due := ev.due(s.now())
	if len(due) == 0 {
		return false
	}
	ids := make([]uuid.UUID, len(due))
	for i, d := range due {
		ids[i] = d.hold
	}
	active, err := s.store.ActiveHoldIDs(ctx, ev.org, ids)
	if err != nil {
		ev.doubt(due...)
		return false
	}
	var rs []seatlock.Released
	for _, d := range due {
		if !active[d.hold] {
			rs = append(rs, seatlock.Released{Seat: d.seat, HoldID: d.hold})
		}
	}
	if _, err := call(s.redis, func() (int, error) { return s.locks.Release(ctx, ev.org, ev.id, rs) }); err != nil {
		ev.doubt(due...)
		return true
	}
	// A dropped lock may have kept the seat's own hold out of Redis: a
	// sync leaves a young lock that is newer than Postgres's state alone
	// (its write may be committing), so a hold made without Redis on that
	// seat meanwhile (on the Postgres-only path, after this lock's reply
	// was lost) was not written. Those seats are read from Postgres again.
	if len(rs) > 0 {
		for _, r := range rs {
			ev.recheck.add(r.Seat)
		}
		s.wake()
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
// message costs nothing but that round. An event the read no longer finds
// was deleted: it is evicted. It returns the events still cached.
func (s *Service) reloadSettings(ctx context.Context, evs []*eventState) []*eventState {
	orgs, ids := make([]uuid.UUID, len(evs)), make([]uuid.UUID, len(evs))
	for i, ev := range evs {
		orgs[i], ids[i] = ev.org, ev.id
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := s.store.EventsByKey(rctx, orgs, ids)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("reload event settings", "events", len(evs), "err", err)
			s.m.BackgroundErrors.WithLabelValues("settings").Inc()
		}
		return evs
	}
	found := make(map[[2]uuid.UUID]store.Event, len(got))
	for _, e := range got {
		found[[2]uuid.UUID{e.OrgID, e.ID}] = e
	}
	kept := evs[:0]
	for _, ev := range evs {
		e, ok := found[[2]uuid.UUID{ev.org, ev.id}]
		if !ok {
			s.evict(ev)
			continue
		}
		ev.setSettings(e)
		kept = append(kept, ev)
	}
	return kept
}
