package hold

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

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
