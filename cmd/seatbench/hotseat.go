package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// HotSeat is many buyers racing for one seat.
type HotSeat struct {
	Buyers   int     `json:"buyers"`
	Granted  int     `json:"granted"`
	Refused  int     `json:"refused"` // 409 seat_taken
	Other    int     `json:"other"`
	WallMS   float64 `json:"wall_ms"` // release of the crowd to the last answer
	MaxMS    float64 `json:"slowest_ms"`
	Refusals Latency `json:"refusal_latency"`
	// PGHoldStatements is the delta of seatd_hold_pg_writes_total: hold
	// statements sent to Postgres. The winner needs one; the rest are
	// RefusalPGWrites, which must be 0.
	PGHoldStatements int            `json:"pg_hold_statements"`
	RefusalPGWrites  int            `json:"refusal_pg_writes"`
	ByTier           map[string]int `json:"refused_by_tier"`
	HoldRows         int            `json:"hold_rows"`
	AuditRows        int            `json:"audit_rows"`
	SeatVersion      int64          `json:"seat_version"`
	// OthersCPU is the share of the machine other processes used meanwhile.
	OthersCPU float64 `json:"others_cpu_share"`
}

// phaseHotSeat sends -hot-buyers buyers, each with its own session and an
// already open connection, at one seat at the same instant.
func (b *bench) phaseHotSeat(ctx context.Context) error {
	main, err := b.procs.mainServer(ctx)
	if err != nil {
		return err
	}
	n := b.cfg.hotBuyers
	ev, seats, err := b.fx.newEvent(ctx, "hot seat", 100, false)
	if err != nil {
		return err
	}
	if err := b.load.warm(ctx, []*server{main}, ev); err != nil {
		return err
	}
	// Open one connection per buyer (and load each session into the
	// server's cache), all at once so the pool ends up with n of them.
	var wg sync.WaitGroup
	for _, s := range b.fx.buyers[:n] {
		wg.Go(func() { _, _, _ = main.call(ctx, s, http.MethodGet, "/api/v1/me", nil) })
	}
	wg.Wait()
	m0, err := main.metrics(ctx)
	if err != nil {
		return err
	}
	seat := seats[0]
	path := "/api/v1/events/" + ev + "/holds"
	type answer struct {
		code int
		end  time.Time
		lat  time.Duration
	}
	answers := make([]answer, n)
	gate := make(chan struct{})
	var ready sync.WaitGroup
	ready.Add(n)
	for i, s := range b.fx.buyers[:n] {
		wg.Go(func() {
			ready.Done()
			<-gate
			t0 := time.Now()
			code := main.post(ctx, s, path, holdBody(seat))
			t1 := time.Now()
			answers[i] = answer{code: code, end: t1, lat: t1.Sub(t0)}
		})
	}
	ready.Wait()
	cpu0 := b.procs.sampleCPU([]*server{main})
	start := time.Now()
	close(gate)
	wg.Wait()
	h := &HotSeat{Buyers: n, ByTier: map[string]int{}, OthersCPU: round3(cpu0.to(b.procs.sampleCPU([]*server{main})).otherShare())}
	var refusals []float64
	var last time.Time
	for _, a := range answers {
		switch a.code {
		case http.StatusCreated:
			h.Granted++
		case http.StatusConflict:
			h.Refused++
			refusals = append(refusals, ms(a.lat))
		default:
			h.Other++
		}
		if a.end.After(last) {
			last = a.end
		}
		h.MaxMS = max(h.MaxMS, round3(ms(a.lat)))
	}
	h.WallMS = round3(ms(last.Sub(start)))
	h.Refusals = latencyOf(refusals)
	m1, err := main.metrics(ctx)
	if err != nil {
		return err
	}
	h.PGHoldStatements = int(m1["seatd_hold_pg_writes_total"] - m0["seatd_hold_pg_writes_total"])
	h.RefusalPGWrites = h.PGHoldStatements - h.Granted
	for _, tier := range []string{"hot", "redis", "postgres"} {
		k := fmt.Sprintf(`seatd_hold_conflict_total{tier=%q}`, tier)
		h.ByTier[tier] = int(m1[k] - m0[k])
	}
	if err := b.db.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM seat_holds WHERE org_id = $2 AND seat_id = $1),
		       (SELECT count(*) FROM audit_log WHERE org_id = $2 AND seat_id = $1),
		       (SELECT version FROM seats WHERE org_id = $2 AND id = $1)`, seat, b.fx.orgID).Scan(&h.HoldRows, &h.AuditRows, &h.SeatVersion); err != nil {
		return err
	}
	b.rep.HotSeat = h
	b.log.printf("hot seat: %d granted, %d refused, %d other in %.0f ms (slowest %.0f ms); refusal p99 %.1f ms; PG hold statements %d",
		h.Granted, h.Refused, h.Other, h.WallMS, h.MaxMS, h.Refusals.P99, h.PGHoldStatements)
	return nil
}
