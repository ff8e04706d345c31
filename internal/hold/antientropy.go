package hold

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// antiEntropySettle is how long after a change its delta may still be in
// flight; older changes a cache lacks were lost.
const antiEntropySettle = 500 * time.Millisecond

// RunAntiEntropy checks, every interval, that this process's cached events
// have every change older than a second. A delta can be lost without
// anyone knowing — the process that committed was killed before it
// published, or a message was dropped — and then the maps would show the
// old state until the seat changes again. Each round reads the seats
// changed since the previous round (with five seconds of overlap, for
// clock skew between processes and Postgres and for transactions that
// commit a while after their timestamps) and applies, as sync deltas, the ones
// whose cached version is older.
func (s *Service) RunAntiEntropy(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	from := map[[2]uuid.UUID]time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		evs := s.cachedEvents()
		next := make(map[[2]uuid.UUID]time.Time, len(evs))
		// One clock read per round, for every event.
		pgNow, err := s.store.PostgresNow(ctx)
		if err != nil {
			continue // from is kept: the next round covers this one's window
		}
		upto := pgNow.Add(-antiEntropySettle)
		for _, ev := range evs {
			k := [2]uuid.UUID{ev.org, ev.id}
			f, ok := from[k]
			if !ok {
				// The event was loaded from Postgres since the last round:
				// the cache is current up to its load, less than a round ago.
				f = s.now().Add(-every)
			}
			f = f.Add(-5 * time.Second)
			seats, err := s.store.SeatsChanged(ctx, ev.org, ev.id, f, upto)
			if err != nil {
				if f, ok := from[k]; ok {
					next[k] = f
				}
				continue
			}
			next[k] = upto
			now := s.now()
			var ds []Delta
			for i := range seats {
				if cur, ok := ev.seat(seats[i].ID); ok && cur.Version < seats[i].Version {
					ds = append(ds, seatDelta(ev.org, ev.id, &seats[i], KindSync, now))
				}
			}
			if len(ds) > 0 {
				s.log.Warn("hot cache had missed changes; applied them from postgres", "org", ev.org, "event", ev.id, "seats", len(ds))
				ev.notify(ev.apply(ds))
			}
		}
		from = next
	}
}
