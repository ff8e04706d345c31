package main

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Idle is what one `seatd serve` costs with nobody using it: its
// background work alone (the notifier's connection, the follower, the
// reaper, the snapshots, the workers' backstop polls), with one on-sale
// event loaded into its hot cache as after a sale's first visitor.
type Idle struct {
	WindowS float64 `json:"window_s"`
	Seats   int     `json:"event_seats"`
	// Processor time per minute of the window, in milliseconds.
	SeatdMSPerMin    float64 `json:"seatd_cpu_ms_per_min"`
	PostgresMSPerMin float64 `json:"postgres_cpu_ms_per_min"`
	RedisMSPerMin    float64 `json:"redis_cpu_ms_per_min"`
	OthersCPU        float64 `json:"others_cpu_share"`
}

// phaseIdle starts a process of its own, loads one on-sale event into it,
// lets it settle and measures the processor time of seatd, Postgres and
// Redis over the window while nothing is asked of it.
func (b *bench) phaseIdle(ctx context.Context) error {
	// Alone: the main process's own background work would count in
	// Postgres's and Redis's time (later phases start it again).
	b.procs.stopNamed("main")
	s, err := b.procs.start(ctx, "idle", nil)
	if err != nil {
		return err
	}
	defer b.procs.stopNamed("idle")
	const seats = 1000
	ev, _, err := b.fx.newEvent(ctx, "idle", seats, true)
	if err != nil {
		return err
	}
	// The first look at the map loads the event, as a visitor's would.
	code, body, err := s.call(ctx, b.fx.buyers[0], http.MethodGet, "/api/v1/events/"+ev+"/seats", nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET seats: %d %s", code, body)
	}
	window := 30 * time.Second
	if b.cfg.quick {
		window = 10 * time.Second
	}
	// Past the load's own aftermath (the follower's first reads, the
	// first snapshot) before the window opens.
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(3 * time.Second):
	}
	b.log.printf("idle: measuring %s", window)
	c0 := b.procs.sampleCPU([]*server{s})
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(window):
	}
	cpu := c0.to(b.procs.sampleCPU([]*server{s}))
	perMin := func(secs float64) float64 { return round3(secs / cpu.Wall * 60 * 1000) }
	b.rep.Idle = &Idle{WindowS: round3(cpu.Wall), Seats: seats, SeatdMSPerMin: perMin(cpu.Seatd),
		PostgresMSPerMin: perMin(cpu.Postgres), RedisMSPerMin: perMin(cpu.Redis), OthersCPU: round3(cpu.otherShare())}
	return nil
}
