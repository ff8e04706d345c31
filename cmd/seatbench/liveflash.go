package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// LiveFlash is the fan-out while holds come at a sale's pace (Rate a
// second, from many buyers, for Seconds) to every socket of Live: frames
// a socket received a second, seat changes a frame, and the time from a
// hold request to the frame showing it at each socket, sampled (every
// tenth hold), from each request's own start (no correction for
// coordinated omission; the rate is offered whatever the answers).
type LiveFlash struct {
	Rate int `json:"holds_per_second"`
	// Tick is seatd's SEATD_LIVE_TICK in the run: at most one frame a
	// socket a tick.
	Tick    string  `json:"tick"`
	Seconds float64 `json:"seconds"`
	Holds   int     `json:"holds"`
	Failed  int     `json:"failed"`
	// FramesPerSocket counts from the first hold to a second after the
	// last (the frames still in flight).
	FramesPerSocket float64 `json:"frames_per_socket_per_second"`
	ChangesPerFrame float64 `json:"changes_per_frame"`
	Latency         Latency `json:"hold_to_frame"`
	// Missed: sampled holds a socket never showed; Dropped: sockets the
	// server closed meanwhile (too slow to keep up).
	Missed  int `json:"missed"`
	Dropped int `json:"sockets_dropped"`
	// CPU per change delivered to one socket (holds × sockets), in µs.
	ServerCPUPerChangeUS float64 `json:"server_cpu_us_per_change"`
	ClientCPUPerChangeUS float64 `json:"client_cpu_us_per_change"`
	CPU                  CPU     `json:"cpu"`
}

// defaultLiveTick is seatd's SEATD_LIVE_TICK unless -seatd-env sets it.
const defaultLiveTick = "100ms"

// flashSamples is how many holds of the flash run are timed to every
// socket.
const flashSamples = 100

// liveSamples is the flash run's sampled holds: seat → sample, and when each
// sample's request was sent (unix ns).
type liveSamples struct {
	sample map[string]int
	t0     []atomic.Int64
}

// liveClient is one socket of the live phase: the probes' arrivals and,
// during the flash run, the frames and seat changes it received, the
// arrival of each sampled hold, and whether it ended.
type liveClient struct {
	conn            *websocket.Conn
	lat             []float32
	frames, changes atomic.Int64
	flashLat        []atomic.Int64 // unix ns; 0: not seen
	ended           atomic.Bool
}

// flashFrame counts a frame received during the flash run, with its seat
// changes, and notes when each sampled hold first showed held.
func (c *liveClient) flashFrame(f *liveSamples, at time.Time, states []seatState) {
	c.frames.Add(1)
	c.changes.Add(int64(len(states)))
	for _, st := range states {
		if k, ok := f.sample[st.id]; ok && st.status == "held" && c.flashLat[k].Load() == 0 {
			c.flashLat[k].Store(at.UnixNano())
		}
	}
}

// liveFlash offers holds of seats at -ws-flash-rate for -ws-flash to the
// live phase's sockets (clients), whose readers record what they receive
// while flash points to the run's samples; nil when too few seats or too
// short a run (the row then says not measured).
func (b *bench) liveFlash(ctx context.Context, s *server, ev string, seats []string, clients []*liveClient, flash *atomic.Pointer[liveSamples]) (*LiveFlash, error) {
	n := min(b.cfg.wsFlashRate*int(b.cfg.wsFlash.Seconds()), len(seats))
	if n < flashSamples*10 {
		return nil, nil // listed as not measured
	}
	f := &liveSamples{sample: map[string]int{}, t0: make([]atomic.Int64, flashSamples)}
	flashSeats := seats[:n]
	for k := range flashSamples {
		f.sample[flashSeats[k*n/flashSamples]] = k
	}
	var ended0 int
	for _, c := range clients {
		if c != nil && c.ended.Load() {
			ended0++
		}
	}
	flash.Store(f)
	fl := &LiveFlash{Rate: b.cfg.wsFlashRate, Tick: cmp.Or(b.cfg.seatdEnv["SEATD_LIVE_TICK"], defaultLiveTick)}
	var failed atomic.Int64
	fcpu0 := b.procs.sampleCPU([]*server{s})
	start := time.Now()
	_, err := loop(ctx, 64, n, time.Time{}, func(w, i int) error {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(fl.Rate))))
		seat := flashSeats[i]
		if k, ok := f.sample[seat]; ok {
			f.t0[k].Store(time.Now().UnixNano())
		}
		if code, _, err := s.hold(ctx, b.fx.buyers[1+i%(len(b.fx.buyers)-1)], ev, seat); err != nil || code != http.StatusCreated {
			failed.Add(1)
		}
		return nil
	})
	fl.Seconds = round3(time.Since(start).Seconds())
	time.Sleep(time.Second) // the last frames in flight
	counted := time.Since(start).Seconds()
	fl.CPU = fcpu0.to(b.procs.sampleCPU([]*server{s}))
	flash.Store(nil)
	if err != nil {
		return nil, fmt.Errorf("live flash: %w", err)
	}
	fl.Failed = int(failed.Load())
	fl.Holds = n - fl.Failed
	var frames, changes int64
	var lat []float64
	live := 0
	for _, c := range clients {
		if c == nil {
			continue
		}
		if c.ended.Load() {
			fl.Dropped++
			continue
		}
		live++
		frames += c.frames.Load()
		changes += c.changes.Load()
		for k := range flashSamples {
			if at := c.flashLat[k].Load(); at > 0 {
				lat = append(lat, ms(time.Duration(at-f.t0[k].Load())))
			} else {
				fl.Missed++
			}
		}
	}
	fl.Dropped -= ended0
	if live > 0 && frames > 0 {
		fl.FramesPerSocket = round3(float64(frames) / float64(live) / counted)
		fl.ChangesPerFrame = round3(float64(changes) / float64(frames))
	}
	if d := float64(fl.Holds) * float64(live); d > 0 {
		fl.ServerCPUPerChangeUS = round3(fl.CPU.Seatd * 1e6 / d)
		fl.ClientCPUPerChangeUS = round3(fl.CPU.Client * 1e6 / d)
	}
	fl.Latency = latencyOf(lat)
	b.log.printf("live: %d holds/s for %.1fs to %d sockets: %.1f frames a socket a second, %.1f changes a frame; hold → frame p50 %.0f p99 %.0f ms (sampled), %d missed, %d sockets dropped, %d holds failed",
		fl.Rate, fl.Seconds, live, fl.FramesPerSocket, fl.ChangesPerFrame, fl.Latency.P50, fl.Latency.P99, fl.Missed, fl.Dropped, fl.Failed)
	return fl, nil
}
