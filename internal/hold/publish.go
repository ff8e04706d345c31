package hold

// Commit and publish: a committed change reaches this process's cache and
// watchers at once and the other processes through the bus; messages from
// them are applied here (docs/architecture.md#real-time).

import (
	"bytes"
	"context"
	"slices"

	"github.com/google/uuid"

	"seatd/internal/realtime"
	"seatd/internal/seatlock"
	"seatd/internal/store"
)

// receive applies a message of another process to an event's cache.
func (e *Engine) receive(ev *eventState, b []byte) {
	if bytes.HasPrefix(b, e.own) {
		// Ours: applied and told to local watchers by commit already.
		return
	}
	msg, err := decodeMessage(b)
	if err != nil {
		e.log.Warn("undecodable live message", "event", ev.id, "err", err)
		return
	}
	if msg.Settings {
		// The follower's round reads every cached event's settings.
		e.wake()
	}
	if msg.Waitlist != nil {
		ev.notifyLine(*msg.Waitlist)
	}
	// Never let a message touch another tenant's or event's cache.
	ds := slices.DeleteFunc(msg.Deltas, func(d Delta) bool { return d.Org != ev.org || d.Event != ev.id })
	e.m.DeltasIn.Add(float64(len(ds)))
	// Holds Redis has as Postgres does, and the cache has from here on:
	// the follower leaves the seats whose last change they are out of its
	// feed, as their maker's does.
	for _, d := range ds {
		if d.Locked && d.Kind == KindHeld {
			ev.known.add(d.HoldID)
		}
	}
	ev.notify(ev.apply(ds))
}

// commit applies deltas of a committed change to this process's cache,
// tells local watchers, and publishes them to the other processes. A
// delta that does not arrive (this process dies, a message is dropped)
// reaches them through the feed.
func (e *Engine) commit(ctx context.Context, org, event uuid.UUID, ds []Delta) {
	e.commitThen(ctx, org, event, ds, nil)
}

// commitThen is commit calling applied (if set) once this process's
// cache has the change, before it is published.
func (e *Engine) commitThen(ctx context.Context, org, event uuid.UUID, ds []Delta, applied func()) {
	if applied != nil {
		defer func() {
			if applied != nil {
				applied()
			}
		}()
	}
	if len(ds) == 0 {
		return
	}
	// Other processes learn of the change from the message; this one
	// skips its own messages, as it applies them here. An event still
	// loading is not cached yet: its message is then sent unsigned, so
	// the load's queue gets it like anyone else's.
	from := uuid.Nil
	if ev := e.cached(org, event); ev != nil {
		ev.notify(ev.apply(ds))
		from = e.self
	}
	if applied != nil {
		applied()
		applied = nil
	}
	// Messages are split to fit the bus's bound, which the Postgres NOTIFY
	// fallback sets (a fixed count of 20 deltas overran it for deltas
	// naming their actor and hold).
	channel := e.locks.Keys(org, event).Live()
	ms, err := deltaMessages(from, ds, realtime.MaxPayload)
	for _, b := range ms {
		if perr := e.bus.Publish(context.WithoutCancel(ctx), channel, b); perr != nil {
			err = perr
		}
	}
	if err != nil {
		e.log.Error("publish deltas", "org", org, "event", event, "err", err)
		e.m.BackgroundErrors.WithLabelValues("publish").Inc()
	}
	e.m.DeltasOut.Add(float64(len(ds)))
}

// commitSale publishes a new booking's seats (a purchase, a counter sale,
// a payment's success): their locks go (the holds ended) and every map
// shows them sold. The event need not be cached here (a payment's webhook
// may reach any process).
func (e *Engine) commitSale(ctx context.Context, org, event uuid.UUID, a Actor, b store.Booking) {
	e.m.Converted.Add(float64(len(b.Sold)))
	now := e.now()
	rs := make([]seatlock.Released, len(b.Sold))
	ds := make([]Delta, len(b.Sold))
	for i, x := range b.Sold {
		rs[i] = seatlock.Released{Seat: x.SeatID, HoldID: x.HoldID, Version: x.Version}
		prev := store.Held
		if x.Prev != "" {
			prev = x.Prev
		}
		ds[i] = Delta{Org: org, Event: event, Seat: x.SeatID, Kind: KindSold, Status: store.Sold, Prev: prev,
			Version: x.Version, Actor: a.User, At: now}
	}
	e.releaseLocks(ctx, org, event, rs)
	e.commit(ctx, org, event, ds)
}

// releaseLocks drops the Redis locks of holds that ended: through the
// event's cache when this process has it (which distrusts the event's
// locks until synced if that fails), else straight (a failure is then
// covered by the follower of a process that has the event cached).
func (e *Engine) releaseLocks(ctx context.Context, org, event uuid.UUID, rs []seatlock.Released) {
	if ev := e.cached(org, event); ev != nil {
		e.dropLocks(ctx, ev, rs)
	} else if e.redis.usable() && len(rs) > 0 {
		_, _ = call(e.redis, func() (int, error) { return e.locks.Release(context.WithoutCancel(ctx), org, event, rs) })
	}
}

// publishWaitlist tells this process's line watchers and the other
// processes of a committed waitlist change, like commit does for seats.
func (e *Engine) publishWaitlist(ctx context.Context, org, event uuid.UUID, c WaitlistChange) {
	from := uuid.Nil
	if ev := e.cached(org, event); ev != nil {
		ev.notifyLine(c)
		from = e.self
	}
	// Users are bounded by one offer round's offers; keep each message
	// under the NOTIFY fallback's limit all the same.
	for {
		n := min(len(c.Users), 100)
		part := WaitlistChange{Users: c.Users[:n], Line: c.Line}
		b, err := encodeMessage(message{From: from, Waitlist: &part})
		if err == nil {
			err = e.bus.Publish(context.WithoutCancel(ctx), e.locks.Keys(org, event).Live(), b)
		}
		if err != nil {
			e.log.Error("publish waitlist change", "org", org, "event", event, "err", err)
			e.m.BackgroundErrors.WithLabelValues("publish").Inc()
		}
		if c.Users = c.Users[n:]; len(c.Users) == 0 {
			return
		}
	}
}

// publishSettings tells the other processes to reload an event's
// settings at once (their follower reads them every round anyway, so a
// lost message only delays it).
func (e *Engine) publishSettings(ctx context.Context, org, id uuid.UUID) {
	if b, err := encodeMessage(message{Settings: true}); err == nil {
		if err := e.bus.Publish(context.WithoutCancel(ctx), e.locks.Keys(org, id).Live(), b); err != nil {
			e.log.Warn("publish event settings", "org", org, "event", id, "err", err)
		}
	}
}

// Watch calls f with every change of an event seen by this process (its
// own commits and other processes' deltas) until the returned function is
// called. The event must belong to the actor's organization.
func (e *Engine) Watch(ctx context.Context, a Actor, event uuid.UUID, f func([]Delta)) (func(), error) {
	ev, err := e.event(ctx, a.Org, event)
	if err != nil {
		return nil, err
	}
	id := ev.watch(f)
	return func() { ev.unwatch(id) }, nil
}

// WatchWaitlist calls f with every change of an event's waitlist (this
// process's and other processes') until the returned function is called,
// and with a change of the whole line when messages may have been lost.
// The event must belong to the actor's organization. f must not block.
func (e *Engine) WatchWaitlist(ctx context.Context, a Actor, event uuid.UUID, f func(WaitlistChange)) (func(), error) {
	ev, err := e.event(ctx, a.Org, event)
	if err != nil {
		return nil, err
	}
	id := ev.watchLine(f)
	return func() { ev.unwatch(id) }, nil
}
