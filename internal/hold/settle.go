package hold

import (
	"context"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/pg"
	"seatd/internal/seatlock"
	"seatd/internal/store"
)

// settleFor bounds how long a process keeps trying to find out what an
// ambiguous write did (Postgres may take that long to come back).
const settleFor = time.Minute

// unknownOutcome reports whether a write that returned err may still have
// committed: its reply was lost (connection reset, timeout) rather than
// Postgres refusing it, which rolls the statement or transaction back.
func unknownOutcome(err error) bool {
	return err != nil && apperr.CodeOf(err) == apperr.Internal && pg.MaybeCommitted(err)
}

// settleIfUnknown settles a write whose outcome is unknown (see settle).
func (s *Service) settleIfUnknown(err error, org, event uuid.UUID, seats, holds []uuid.UUID) {
	if !unknownOutcome(err) {
		return
	}
	s.settle(func(ctx context.Context) error {
		hs := make([]store.Hold, 0, len(holds))
		for _, id := range holds {
			h, err := s.store.HoldByID(ctx, org, id)
			if apperr.CodeOf(err) == apperr.NotFound {
				continue
			}
			if err != nil {
				return err
			}
			hs = append(hs, h)
		}
		ev := event
		if ev == uuid.Nil && len(hs) > 0 {
			ev = hs[0].EventID
		}
		if ev == uuid.Nil {
			return nil
		}
		return s.settleSeats(ctx, org, ev, seats, hs)
	})
}

// settleExpired settles a reaper batch whose outcome is unknown: every hold
// expired since then is published again (a process that has it already
// ignores the delta).
func (s *Service) settleExpired(since time.Time) {
	s.settle(func(ctx context.Context) error {
		hs, err := s.store.ExpiredSince(ctx, since)
		if err != nil {
			return err
		}
		byEvent := map[[2]uuid.UUID][]store.Hold{}
		for _, h := range hs {
			k := [2]uuid.UUID{h.OrgID, h.EventID}
			byEvent[k] = append(byEvent[k], h)
		}
		for k, group := range byEvent {
			if err := s.settleSeats(ctx, k[0], k[1], nil, group); err != nil {
				return err
			}
		}
		return nil
	})
}

// settle runs f in the background until it succeeds or settleFor passes.
// A write whose reply was lost may have committed: if it did, no delta was
// published and Redis was not updated, so every map would show the old
// state until the seat changes again. Once Postgres answers, f reads what
// is true and publishes it.
func (s *Service) settle(f func(ctx context.Context) error) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), settleFor)
		defer cancel()
		for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
			err := f(ctx)
			if err == nil {
				return
			}
			select {
			case <-ctx.Done():
				s.log.Error("could not settle a write with an unknown outcome", "err", err)
				return
			case <-time.After(wait):
			}
		}
	}()
}

// settleSeats publishes the current state of the seats (and of the holds'
// seats) as sync deltas to every process, and makes Redis agree: locks put
// back for seats Postgres holds, dropped for the given holds that ended.
func (s *Service) settleSeats(ctx context.Context, org, event uuid.UUID, seats []uuid.UUID, holds []store.Hold) error {
	for _, h := range holds {
		seats = append(seats, h.SeatID)
	}
	cur, err := s.store.SeatsByID(ctx, org, event, seats)
	if err != nil {
		return err
	}
	now := s.now()
	ds := make([]Delta, len(cur))
	idx := make(map[uuid.UUID]int, len(cur))
	var held []uuid.UUID
	for i := range cur {
		ds[i] = seatDelta(org, event, &cur[i], KindSync, now)
		idx[cur[i].ID] = cur[i].Idx
		if cur[i].Status == store.Held {
			held = append(held, cur[i].ID)
		}
	}
	s.commit(ctx, org, event, ds)
	var ended []seatlock.Released
	for _, h := range holds {
		if h.Status != store.HoldActive {
			ended = append(ended, seatlock.Released{Seat: seatlock.Seat{ID: h.SeatID, Idx: idx[h.SeatID]}, HoldID: h.ID,
				Free: h.Status != store.HoldConverted})
		}
	}
	s.dropLocks(ctx, org, event, ended)
	if ev := s.cached(org, event); ev != nil && s.FastPath() {
		s.restoreLocks(ctx, ev, held)
	}
	return nil
}
