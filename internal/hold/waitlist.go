package hold

// The waitlist: buyers join an event's line for seats, and offer rounds
// hold freed seats for the first in line who fit
// (docs/architecture.md#the-waitlist).

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/notify"
	"seatd/internal/store"
)

// Waitlist keeps events' lines and makes their offers.
type Waitlist struct {
	e *Engine
	// n wakes the offer worker (Run) when work is announced.
	n notify.Subscriber
	// offerHook, set by tests only, runs before an offer round's
	// transaction commits (store.OfferParams.BeforeCommit).
	offerHook func(context.Context) error
}

// NewWaitlist builds the waitlist's job on the engine; its offer worker
// hears queued work announced through n.
func NewWaitlist(e *Engine, n notify.Subscriber) *Waitlist { return &Waitlist{e: e, n: n} }

// DefaultOfferTTL is how long an offer's seats stay held for a waiting
// buyer when Options.OfferTTL is not set.
const DefaultOfferTTL = 10 * time.Minute

// WaitFor is what a buyer joins an event's line for: Count seats,
// optionally of a Category and a Section (id or label), and Accessible
// when they need accessible seating (their offers may then include the
// seats kept back for it, as their holds may).
type WaitFor struct {
	Count             int
	Category, Section string
	Accessible        bool
}

// Join puts a buyer in line for what w asks for.
func (wl *Waitlist) Join(ctx context.Context, a Actor, event uuid.UUID, w WaitFor) (store.WaitlistEntry, error) {
	if a.Role != RoleBuyer {
		return store.WaitlistEntry{}, apperr.E(apperr.Forbidden, "only buyers can join a waitlist")
	}
	if w.Count < 1 || w.Count > wl.e.opt.MaxSeatsPerRequest {
		return store.WaitlistEntry{}, &apperr.Error{Code: apperr.Invalid,
			Message: fmt.Sprintf("wait for between 1 and %d seats", wl.e.opt.MaxSeatsPerRequest),
			Fields:  map[string]string{"count": fmt.Sprintf("must be 1 to %d", wl.e.opt.MaxSeatsPerRequest)}}
	}
	if _, err := wl.e.buyerEvent(ctx, a, event); err != nil {
		return store.WaitlistEntry{}, err
	}
	e, err := wl.e.store.Waitlist.Join(ctx, store.WaitlistRequest{Org: a.Org, Event: event, User: a.User, Seats: w.Count,
		Category: w.Category, Section: w.Section, Accessible: w.Accessible})
	if err != nil {
		return e, err
	}
	// A newcomer is last: only their own panels change.
	wl.e.publishWaitlist(ctx, a.Org, event, WaitlistChange{Users: []uuid.UUID{a.User}})
	return e, nil
}

// Mine lists the actor's entries (waiting or offered) for an event.
func (wl *Waitlist) Mine(ctx context.Context, a Actor, event uuid.UUID) ([]store.WaitlistEntry, error) {
	if _, err := wl.e.buyerEvent(ctx, a, event); err != nil {
		return nil, err
	}
	return wl.e.store.Waitlist.OfUser(ctx, a.Org, event, a.User)
}

// Line is how many wait for an event and the first limit in line
// (staff only).
func (wl *Waitlist) Line(ctx context.Context, a Actor, event uuid.UUID, limit int) (int, []store.WaitlistEntry, error) {
	if !a.Staff() {
		return 0, nil, apperr.E(apperr.Forbidden, "only staff can see an event's waitlist")
	}
	if _, err := wl.e.event(ctx, a.Org, event); err != nil {
		return 0, nil, err
	}
	return wl.e.store.Waitlist.OfEvent(ctx, a.Org, event, limit)
}

// Leave takes the actor's waiting entry (or, for staff, anyone's)
// out of line.
func (wl *Waitlist) Leave(ctx context.Context, a Actor, id uuid.UUID) error {
	event, user, err := wl.e.store.Waitlist.Leave(ctx, a.Org, id, a.User, a.Staff())
	if err != nil {
		return err
	}
	wl.e.publishWaitlist(ctx, a.Org, event, WaitlistChange{Users: []uuid.UUID{user}, Line: true})
	return nil
}

// OfferRound does waitlist work until none is left (or ctx ends) and
// returns how many offers it made. Offers are written in Postgres only
// (like holds on the Postgres-only path) and then published through the
// normal commit path, so every map and the buyer's cart show them at once;
// the follower brings Redis in line from the feed, and Postgres refuses a
// fast-path hold on an offered seat whatever Redis says.
func (wl *Waitlist) OfferRound(ctx context.Context) (int, error) {
	total := 0
	for ctx.Err() == nil {
		found, offers, err := wl.e.store.Waitlist.Offer(ctx, store.OfferParams{TTL: wl.offerTTL(), BeforeCommit: wl.offerHook})
		if err != nil {
			return total, err
		}
		wl.publishOffers(ctx, offers)
		total += len(offers)
		if !found {
			break
		}
	}
	return total, nil
}

func (wl *Waitlist) offerTTL() time.Duration {
	if wl.e.opt.OfferTTL > 0 {
		return wl.e.opt.OfferTTL
	}
	return DefaultOfferTTL
}

func (wl *Waitlist) publishOffers(ctx context.Context, offers []store.Offer) {
	now := wl.e.now()
	// The offered buyers' entries changed and left the line, so everyone
	// behind them moved up: told once per event, after its seats.
	type eventKey struct{ org, event uuid.UUID }
	offered := map[eventKey][]uuid.UUID{}
	var events []eventKey
	for _, o := range offers {
		k := eventKey{o.Entry.Org, o.Entry.Event}
		if _, ok := offered[k]; !ok {
			events = append(events, k)
		}
		offered[k] = append(offered[k], o.Entry.User)
		wl.e.m.WaitlistOffers.Inc()
		ds := make([]Delta, len(o.Holds))
		for i, h := range o.Holds {
			ds[i] = holdDelta(h, KindOffered, store.Held, store.Available, h.UserID, now)
		}
		wl.e.commit(ctx, o.Entry.Org, o.Entry.Event, ds)
		wl.e.log.Info("waitlist offer", "org", o.Entry.Org, "event", o.Entry.Event, "entry", o.Entry.ID,
			"user", o.Entry.User, "seats", len(o.Holds))
	}
	for _, k := range events {
		wl.e.publishWaitlist(ctx, k.org, k.event, WaitlistChange{Users: offered[k], Line: true})
	}
	if len(offers) > 0 {
		// Offers are written in Postgres only: the follower's round now,
		// rather than at its next tick, brings Redis in line with them.
		wl.e.wake()
	}
}

// WaitlistChannel is the Postgres notification channel on which the
// statements that queue waitlist work announce it (migration 029).
const WaitlistChannel = "seatd_waitlist"

// Run runs the offer worker until ctx ends. Work is durable (queued in
// Postgres by the statement that freed the seats, which announces it on
// WaitlistChannel in the same transaction), so whichever process's worker
// wakes first offers it: a round runs on each announcement (at most ten
// rounds a second: a round takes all the work queued), whenever the
// notifier (re)connects (announcements may have been missed) and every
// Options.OfferEvery, a backstop for the rest (see notify.Work).
func (wl *Waitlist) Run(ctx context.Context) {
	sched := notify.Schedule{Cooldown: 100 * time.Millisecond, Settle: 250 * time.Millisecond, Backstop: wl.e.opt.OfferEvery}
	notify.Work(ctx, wl.n, WaitlistChannel, sched, func(ctx context.Context) time.Duration {
		if n, err := wl.OfferRound(ctx); err != nil && ctx.Err() == nil {
			wl.e.m.BackgroundErrors.WithLabelValues("waitlist").Inc()
			wl.e.log.Error("waitlist offers", "err", err)
		} else if n > 0 {
			wl.e.log.Info("waitlist offers made", "count", n)
		}
		return notify.Idle
	})
}
