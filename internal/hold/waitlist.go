package hold

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/notify"
	"seatd/internal/store"
)

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

// JoinWaitlist puts a buyer in line for what w asks for.
func (s *Service) JoinWaitlist(ctx context.Context, a Actor, event uuid.UUID, w WaitFor) (store.WaitlistEntry, error) {
	if a.Role != RoleBuyer {
		return store.WaitlistEntry{}, apperr.E(apperr.Forbidden, "only buyers can join a waitlist")
	}
	if w.Count < 1 || w.Count > s.opt.MaxSeatsPerRequest {
		return store.WaitlistEntry{}, &apperr.Error{Code: apperr.Invalid,
			Message: fmt.Sprintf("wait for between 1 and %d seats", s.opt.MaxSeatsPerRequest),
			Fields:  map[string]string{"count": fmt.Sprintf("must be 1 to %d", s.opt.MaxSeatsPerRequest)}}
	}
	if _, err := s.buyerEvent(ctx, a, event); err != nil {
		return store.WaitlistEntry{}, err
	}
	e, err := s.store.JoinWaitlist(ctx, store.WaitlistRequest{Org: a.Org, Event: event, User: a.User, Seats: w.Count,
		Category: w.Category, Section: w.Section, Accessible: w.Accessible})
	if err != nil {
		return e, err
	}
	// A newcomer is last: only their own panels change.
	s.publishWaitlist(ctx, a.Org, event, WaitlistChange{Users: []uuid.UUID{a.User}})
	return e, nil
}

// MyWaitlist lists the actor's entries (waiting or offered) for an event.
func (s *Service) MyWaitlist(ctx context.Context, a Actor, event uuid.UUID) ([]store.WaitlistEntry, error) {
	if _, err := s.buyerEvent(ctx, a, event); err != nil {
		return nil, err
	}
	return s.store.MyWaitlist(ctx, a.Org, event, a.User)
}

// EventWaitlist is how many wait for an event and the first limit in line
// (staff only).
func (s *Service) EventWaitlist(ctx context.Context, a Actor, event uuid.UUID, limit int) (int, []store.WaitlistEntry, error) {
	if !a.Staff() {
		return 0, nil, apperr.E(apperr.Forbidden, "only staff can see an event's waitlist")
	}
	if _, err := s.event(ctx, a.Org, event); err != nil {
		return 0, nil, err
	}
	return s.store.EventWaitlist(ctx, a.Org, event, limit)
}

// LeaveWaitlist takes the actor's waiting entry (or, for staff, anyone's)
// out of line.
func (s *Service) LeaveWaitlist(ctx context.Context, a Actor, id uuid.UUID) error {
	event, user, err := s.store.LeaveWaitlist(ctx, a.Org, id, a.User, a.Staff())
	if err != nil {
		return err
	}
	s.publishWaitlist(ctx, a.Org, event, WaitlistChange{Users: []uuid.UUID{user}, Line: true})
	return nil
}

// OfferRound does waitlist work until none is left (or ctx ends) and
// returns how many offers it made. Offers are written in Postgres only
// (like holds on the Postgres-only path) and then published through the
// normal commit path, so every map and the buyer's cart show them at once;
// the follower brings Redis in line from the feed, and Postgres refuses a
// fast-path hold on an offered seat whatever Redis says.
func (s *Service) OfferRound(ctx context.Context) (int, error) {
	total := 0
	for ctx.Err() == nil {
		found, offers, err := s.store.OfferWaitlist(ctx, store.OfferParams{TTL: s.offerTTL(), BeforeCommit: s.offerHook})
		if err != nil {
			return total, err
		}
		s.publishOffers(ctx, offers)
		total += len(offers)
		if !found {
			break
		}
	}
	return total, nil
}

func (s *Service) offerTTL() time.Duration {
	if s.opt.OfferTTL > 0 {
		return s.opt.OfferTTL
	}
	return DefaultOfferTTL
}

func (s *Service) publishOffers(ctx context.Context, offers []store.Offer) {
	now := s.now()
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
		s.m.WaitlistOffers.Inc()
		ds := make([]Delta, len(o.Holds))
		for i, h := range o.Holds {
			ds[i] = holdDelta(h, KindOffered, store.Held, store.Available, h.UserID, now)
		}
		s.commit(ctx, o.Entry.Org, o.Entry.Event, ds)
		s.log.Info("waitlist offer", "org", o.Entry.Org, "event", o.Entry.Event, "entry", o.Entry.ID,
			"user", o.Entry.User, "seats", len(o.Holds))
	}
	for _, k := range events {
		s.publishWaitlist(ctx, k.org, k.event, WaitlistChange{Users: offered[k], Line: true})
	}
	if len(offers) > 0 {
		// Offers are written in Postgres only: the follower's round now,
		// rather than at its next tick, brings Redis in line with them.
		s.wake()
	}
}

// WaitlistChannel is the Postgres notification channel on which the
// statements that queue waitlist work announce it (migration 029).
const WaitlistChannel = "seatd_waitlist"

// RunWaitlist runs the offer worker until ctx ends. Work is durable
// (queued in Postgres by the statement that freed the seats, which
// announces it on WaitlistChannel in the same transaction), so whichever
// process's worker wakes first offers it: a round runs on each
// announcement (at most ten rounds a second: a round takes all the work
// queued), whenever the notifier (re)connects (announcements may have
// been missed) and every interval, a backstop for the rest (see
// notify.Work).
func (s *Service) RunWaitlist(ctx context.Context, n notify.Subscriber, interval time.Duration) {
	sched := notify.Schedule{Cooldown: 100 * time.Millisecond, Settle: 250 * time.Millisecond, Backstop: interval}
	notify.Work(ctx, n, WaitlistChannel, sched, func(ctx context.Context) time.Duration {
		if n, err := s.OfferRound(ctx); err != nil && ctx.Err() == nil {
			s.m.BackgroundErrors.WithLabelValues("waitlist").Inc()
			s.log.Error("waitlist offers", "err", err)
		} else if n > 0 {
			s.log.Info("waitlist offers made", "count", n)
		}
		return notify.Idle
	})
}
