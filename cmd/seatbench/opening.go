package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Opening is the first second of a sale on a big event: buyers with open
// connections all send their first hold at once to a process that has not
// loaded the event (cold), or that loaded it at startup (warmed), then go
// on holding in a closed loop (steady).
type Opening struct {
	Seats  int         `json:"seats"`
	Buyers int         `json:"buyers"`
	Cold   *FirstHolds `json:"cold"`
	Warmed *FirstHolds `json:"warmed,omitempty"`
	Steady *Load       `json:"steady,omitempty"`
	// SteadyMe is the steady run's reference: the same buyers on the same
	// process asking GET /api/v1/me in a closed loop, with the same
	// warm-up and window; SteadyMePerSec its answers per second.
	SteadyMe       *Latency `json:"steady_me,omitempty"`
	SteadyMePerSec float64  `json:"steady_me_per_s,omitempty"`
	// WarmMS is how long the warmed process took from start to having the
	// event loaded (its seatd_hot_cache_warms_total turning 1).
	WarmMS float64 `json:"warm_ms,omitempty"`
}

// FirstHolds is every buyer's first hold, sent together.
type FirstHolds struct {
	Latency Latency `json:"latency"`
	Failed  int     `json:"failed"`
}

// phaseOpening measures the opening of a sale. Latencies are per request,
// from just before it is sent to its answer, over connections opened
// beforehand: a closed loop, which does not correct for coordinated
// omission (a request that would have been sent during a slow answer is
// not counted as waiting); the first-hold figures are the wait itself.
func (b *bench) phaseOpening(ctx context.Context) error {
	n := b.cfg.openingBuyers
	if n > len(b.fx.buyers) {
		return fmt.Errorf("%d buyers asked, %d created", n, len(b.fx.buyers))
	}
	buyers := b.fx.buyers[:n]
	ev, seats, err := b.fx.newEvent(ctx, "opening", b.cfg.openingSeats, false)
	if err != nil {
		return err
	}
	// The soonest event: the one a startup warms first.
	if _, err := b.db.Exec(ctx, `UPDATE events SET starts_at = now() + interval '1 day' WHERE org_id = $1 AND id = $2`, b.fx.orgID, ev); err != nil {
		return err
	}
	op := &Opening{Seats: b.cfg.openingSeats, Buyers: n}
	b.rep.Opening = op
	next := 0
	take := func() []string { s := seats[next : next+n]; next += n; return s }

	cold, err := b.procs.start(ctx, "opening-cold", nil)
	if err != nil {
		return err
	}
	op.Cold = firstHolds(ctx, cold, buyers, ev, take())
	b.log.printf("opening, cold process: first holds of %d buyers p50 %.0f max %.0f ms", n, op.Cold.Latency.P50, op.Cold.Latency.Max)
	op.Steady = b.load.closedLoop(ctx, []*server{cold}, buyers, ev, seats[next:], b.cfg.warmup, b.cfg.duration, nil)
	b.log.printf("opening, steady with %d open connections: %s", n, op.Steady.summary())
	me, perSec, err := meLoop(ctx, cold, buyers, b.cfg.warmup, b.cfg.duration)
	if err != nil {
		return fmt.Errorf("opening: the steady run's reference: %w", err)
	}
	op.SteadyMe, op.SteadyMePerSec = &me, round3(perSec)
	b.log.printf("opening, GET /api/v1/me with %d open connections: p99 %.1f ms at %.0f/s", n, me.P99, perSec)
	b.procs.stopNamed("opening-cold")
	// Seats the steady run held are gone: the warmed run takes free ones.
	rows, err := b.db.Query(ctx, `SELECT id::text FROM seats WHERE org_id = $1 AND event_id = $2 AND status = 'available' ORDER BY idx LIMIT $3`, b.fx.orgID, ev, n)
	if err != nil {
		return err
	}
	free, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if len(free) < n {
		return fmt.Errorf("opening: out of seats for the warmed run: raise -opening-seats")
	}

	start := time.Now()
	warm, err := b.procs.start(ctx, "opening-warm", map[string]string{"SEATD_WARM_EVENTS": "1"})
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		m, err := warm.metrics(ctx)
		if err == nil && m["seatd_hot_cache_warms_total"] >= 1 {
			break
		}
		if time.Since(start) > time.Minute {
			return fmt.Errorf("opening: the warmed process did not load the event within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	op.WarmMS = round3(ms(time.Since(start)))
	op.Warmed = firstHolds(ctx, warm, buyers, ev, free)
	b.log.printf("opening, warmed process (loaded in %.0f ms from start): first holds p50 %.0f max %.0f ms",
		op.WarmMS, op.Warmed.Latency.P50, op.Warmed.Latency.Max)
	b.procs.stopNamed("opening-warm")
	return nil
}

// meLoop is a closed loop of GET /api/v1/me, one worker per buyer on
// its own connection, for warmup and then dur: the latency of the calls
// sent within the window after warmup, and their number per second.
func meLoop(ctx context.Context, srv *server, buyers []*session, warmup, dur time.Duration) (Latency, float64, error) {
	winStart := time.Now().Add(warmup)
	winEnd := winStart.Add(dur)
	lats := make([][]float64, len(buyers))
	_, err := loop(ctx, len(buyers), math.MaxInt, winEnd, func(w, _ int) error {
		t := time.Now()
		code, _, err := srv.call(ctx, buyers[w], http.MethodGet, "/api/v1/me", nil)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("GET /api/v1/me answered %d", code)
		}
		if !t.Before(winStart) {
			lats[w] = append(lats[w], ms(time.Since(t)))
		}
		return err
	})
	all := slices.Concat(lats...)
	return latencyOf(all), float64(len(all)) / dur.Seconds(), err
}

// firstHolds opens one connection per buyer (a GET each), then sends every
// buyer's first hold at the same moment.
func firstHolds(ctx context.Context, srv *server, buyers []*session, event string, seats []string) *FirstHolds {
	for _, s := range buyers {
		_, _, _ = srv.call(ctx, s, http.MethodGet, "/api/v1/me", nil)
	}
	lat := make([]float64, len(buyers))
	codes := make([]int, len(buyers))
	var ready, wg sync.WaitGroup
	ready.Add(len(buyers))
	gate := make(chan struct{})
	for i, s := range buyers {
		wg.Go(func() {
			ready.Done()
			<-gate
			t0 := time.Now()
			codes[i] = srv.post(ctx, s, "/api/v1/events/"+event+"/holds", holdBody(seats[i]))
			lat[i] = ms(time.Since(t0))
		})
	}
	ready.Wait()
	close(gate)
	wg.Wait()
	out := &FirstHolds{}
	var ok []float64
	for i, c := range codes {
		if c == http.StatusCreated {
			ok = append(ok, lat[i])
		} else {
			out.Failed++
		}
	}
	out.Latency = latencyOf(ok)
	return out
}
