package hold

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/chart"
	"seatd/internal/store"
)

// gaAttempts bounds how often one GA request picks new places after the
// ones it picked were taken by someone else in the meantime.
const gaAttempts = 8

// gaPlaces groups the places of an event's GA sections by section id.
func gaPlaces(sections []store.Section, seats []store.Seat) map[uuid.UUID][]*store.Seat {
	ga := map[uuid.UUID]bool{}
	for _, sec := range sections {
		if sec.Kind == chart.GA {
			ga[sec.ID] = true
		}
	}
	out := map[uuid.UUID][]*store.Seat{}
	for i := range seats {
		if ga[seats[i].SectionID] {
			out[seats[i].SectionID] = append(out[seats[i].SectionID], &seats[i])
		}
	}
	return out
}

// GASection is a general-admission section and its places left (available
// now in this process's view: a hold may still take them).
type GASection struct {
	ID       uuid.UUID
	Label    string
	Name     string
	Capacity int
	Left     int
}

// GASections lists the event's GA sections with their places left, from
// the hot cache.
func (s *Service) GASections(ctx context.Context, a Actor, event uuid.UUID) ([]GASection, error) {
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return nil, err
	}
	secs, counts := ev.occupancy()
	var out []GASection
	for i, sec := range secs {
		if sec.Kind == chart.GA {
			out = append(out, GASection{ID: sec.ID, Label: sec.Label, Name: sec.Name, Capacity: sec.Capacity,
				Left: counts[i].Available})
		}
	}
	return out, nil
}

// HoldGA holds count places of the event's GA section labelled section
// for the actor: one hold per place, all or none, through the same path
// as seats (cap, sales window, TTL, Redis then Postgres).
//
// Places are interchangeable, so the request picks count places that look
// free in the hot cache, starting at a random place of the section: many
// buyers of one section at once pick different rows rather than queueing
// on one counter. When some of its picks were taken meanwhile (Redis or
// Postgres refuses them), it picks others, up to gaAttempts times. The
// cache only chooses; Redis and Postgres grant, so a lagging cache (or no
// Redis) can cost a retry but never oversell. 409 sold_out when fewer than
// count places are left.
func (s *Service) HoldGA(ctx context.Context, a Actor, event uuid.UUID, section string, count int, source string) (Result, error) {
	if count < 1 || count > s.opt.MaxSeatsPerRequest {
		return Result{}, &apperr.Error{Code: apperr.Invalid,
			Message: fmt.Sprintf("hold between 1 and %d places at once", s.opt.MaxSeatsPerRequest),
			Fields:  map[string]string{"ga.count": fmt.Sprintf("must be 1 to %d", s.opt.MaxSeatsPerRequest)}}
	}
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return Result{}, err
	}
	secID, ok := ev.gaSection(section)
	if !ok {
		return Result{}, &apperr.Error{Code: apperr.NotFound, Message: fmt.Sprintf("no general-admission section %q in this event", section)}
	}
	refused := map[uuid.UUID]bool{}
	for range gaAttempts {
		ids := ev.pickPlaces(secID, count, refused)
		if len(ids) < count {
			return Result{}, soldOut(section, len(ids))
		}
		res, err := s.observedHold(ctx, a, event, ids, source, holdOpts{ga: true})
		var e *apperr.Error
		if apperr.CodeOf(err) != apperr.SeatTaken || !errors.As(err, &e) {
			return res, err
		}
		for _, id := range e.Seats {
			if u, err := uuid.Parse(id); err == nil {
				refused[u] = true
			}
		}
	}
	return Result{}, &apperr.Error{Code: apperr.SeatTaken,
		Message: fmt.Sprintf("the places of section %s are going fast and were taken while we tried; try again", section)}
}

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

// gaKeyWait bounds how long a repeated keyed GA request waits for the
// first one to finish, and gaKeyStale how old an unfinished claim must be
// (its process died mid-request) before a repeat takes it over.
const (
	gaKeyWait  = 10 * time.Second
	gaKeyStale = 30 * time.Second
)

// HoldGAOnce is HoldGA under the buyer's idempotency key (none: HoldGA):
// places are picked at random, so repeating a request would hold more;
// with the same key a repeat answers the holds the first request made
// (Created false) and holds nothing more, whichever process it reaches
// and however many arrive at once. The key is claimed in Postgres before
// the hold; a request that held nothing frees it, so the key may be used
// again. The same key with another section or count is refused
// (idempotency_mismatch).
func (s *Service) HoldGAOnce(ctx context.Context, a Actor, event uuid.UUID, section string, count int, source, key string) (Result, error) {
	if key == "" {
		return s.HoldGA(ctx, a, event, section, count, source)
	}
	if _, err := s.event(ctx, a.Org, event); err != nil {
		return Result{}, err
	}
	k := store.HoldKey{Org: a.Org, User: a.User, Event: event, Key: key,
		Hash: fmt.Sprintf("ga %s %d %q", event, count, section)}
	deadline := s.now().Add(gaKeyWait)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		c, err := s.store.ClaimHoldRequest(ctx, k, gaKeyStale)
		switch {
		case err != nil:
			return Result{}, err
		case c.Mine:
			return s.holdGAClaimed(ctx, a, event, section, count, source, k)
		case c.Done:
			hs, err := s.store.HoldsByID(ctx, a.Org, c.HoldIDs)
			return Result{Holds: hs}, err
		}
		if s.now().After(deadline) {
			return Result{}, apperr.E(apperr.Conflict, "a request with this Idempotency-Key is still being processed; try again shortly")
		}
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// holdGAClaimed holds the places of a keyed request whose key it claimed
// and records the holds with the key (or frees the key if none were made).
func (s *Service) holdGAClaimed(ctx context.Context, a Actor, event uuid.UUID, section string, count int, source string, k store.HoldKey) (Result, error) {
	res, err := s.HoldGA(ctx, a, event, section, count, source)
	// The caller going away must not leave the claim half done.
	ctx = context.WithoutCancel(ctx)
	if err != nil {
		if derr := s.store.DropHoldRequest(ctx, k); derr != nil {
			s.log.Error("free idempotency key", "org", a.Org, "user", a.User, "err", derr)
		}
		return res, err
	}
	ids := make([]uuid.UUID, len(res.Holds))
	for i, h := range res.Holds {
		ids[i] = h.ID
	}
	if err := s.store.FinishHoldRequest(ctx, k, ids); err != nil {
		return Result{}, fmt.Errorf("record keyed hold: %w", err)
	}
	return res, nil
}
