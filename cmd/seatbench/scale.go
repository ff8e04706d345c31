package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// phaseMulti spreads -multi-buyers buyers round-robin over 2 and 3 seatd
// processes sharing one Redis and one Postgres.
func (b *bench) phaseMulti(ctx context.Context) error {
	main, err := b.procs.mainServer(ctx)
	if err != nil {
		return err
	}
	defer b.procs.stopNamed("extra1", "extra2", "extra3", "extra4")
	c := b.cfg.multiBuyers
	if c > len(b.fx.buyers) {
		return fmt.Errorf("%d buyers asked, %d created", c, len(b.fx.buyers))
	}
	base, ref := b.rep.holdsAt(c)
	servers := []*server{main}
	for _, n := range b.cfg.multiProcs {
		for len(servers) < n {
			s, err := b.procs.start(ctx, fmt.Sprintf("extra%d", len(servers)), nil)
			if err != nil {
				return err
			}
			servers = append(servers, s)
		}
		ev, seats, err := b.fx.newEvent(ctx, fmt.Sprintf("multi %d", n), b.cfg.eventSeats, false)
		if err != nil {
			return err
		}
		if err := b.load.warm(ctx, servers[:n], ev); err != nil {
			return err
		}
		lvl := &HoldLevel{Buyers: c, Base: base, Ref: ref}
		lvl.HTTP = b.load.closedLoop(ctx, servers[:n], b.fx.buyers[:c], ev, seats, b.cfg.warmup, b.cfg.duration, nil)
		lvl.ratios()
		b.rep.Multi = append(b.rep.Multi, lvl)
		b.log.printf("holds %d buyers over %d processes: %s", c, n, lvl.HTTP.summary())
	}
	return b.behindBalancer(ctx, servers, base, ref)
}

// behindBalancer runs the multi-process load through haproxy in front of
// every process: what a deployment does (make run-cluster). The
// balancer's own CPU is reported apart from seatd's.
func (b *bench) behindBalancer(ctx context.Context, servers []*server, base, ref *Load) error {
	c := b.cfg.multiBuyers
	lb, err := b.procs.startBalancer(ctx, servers)
	if err != nil {
		return err
	}
	defer lb.stop()
	ev, seats, err := b.fx.newEvent(ctx, fmt.Sprintf("haproxy %d", len(servers)), b.cfg.eventSeats, false)
	if err != nil {
		return err
	}
	if err := b.load.warm(ctx, servers, ev); err != nil {
		return err
	}
	var during func(context.Context)
	if b.cfg.profileMulti {
		during = b.profileNamed(servers[0], "haproxy", min(b.cfg.profileFor, b.cfg.duration))
	}
	lb0, _, _ := procCPU(lb.pid, false)
	lvl := &HoldLevel{Buyers: c, Base: base, Ref: ref, Balanced: true}
	lvl.HTTP = b.load.closedLoop(ctx, lb.through(servers), b.fx.buyers[:c], ev, seats, b.cfg.warmup, b.cfg.duration, during)
	lb1, _, _ := procCPU(lb.pid, false)
	// The balancer ran over warmup and window; its share of the window.
	lvl.HTTP.CPU.Balancer = round3((lb1 - lb0) * b.cfg.duration.Seconds() / (b.cfg.warmup + b.cfg.duration).Seconds())
	lvl.HTTP.finish()
	lvl.ratios()
	b.rep.Multi = append(b.rep.Multi, lvl)
	b.log.printf("holds %d buyers over %d processes behind haproxy: %s; haproxy %.0f µs/hold", c, len(servers),
		lvl.HTTP.summary(), lvl.HTTP.CPUPerHold.Balancer)
	n := min(b.cfg.wsClients, 1000)
	la, err := b.liveAcross(ctx, lb.through(servers[:1])[0], len(servers), n, min(b.cfg.wsHolds, 20))
	if err != nil {
		return err
	}
	b.rep.LiveAcross = la
	b.log.printf("live through haproxy, %d sockets over %d processes: hold → frame p50 %.1f p99 %.1f max %.1f ms, %d of %d missed",
		la.Sockets, la.Procs, la.Latency.P50, la.Latency.P99, la.Latency.Max, la.Missed, la.Expected)
	return nil
}

// phaseFallback runs the distinct-seat load against a seatd whose Redis
// is a closed loopback port: the breaker opens and every hold takes the
// Postgres-only path (single seats: the shared hold statement; live
// messages through NOTIFY).
func (b *bench) phaseFallback(ctx context.Context) error {
	// Nothing else runs meanwhile.
	b.procs.stopNamed("main")
	port, err := b.procs.ports.Loopback()
	if err != nil {
		return err
	}
	s, err := b.procs.start(ctx, "fallback", map[string]string{"REDIS_URL": fmt.Sprintf("redis://127.0.0.1:%d/0", port)})
	if err != nil {
		return err
	}
	defer b.procs.stop(s)
	for i, c := range b.cfg.fallback {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if c > len(b.fx.buyers) {
			return fmt.Errorf("%d buyers asked, %d created", c, len(b.fx.buyers))
		}
		ev, seats, err := b.fx.newEvent(ctx, fmt.Sprintf("fallback %d", c), b.cfg.eventSeats, false)
		if err != nil {
			return err
		}
		if err := b.load.warm(ctx, []*server{s}, ev); err != nil {
			return err
		}
		if i == 0 {
			// A few holds trip the breaker; then /readyz must say degraded.
			if err := b.tripBreaker(ctx, s, ev, seats[len(seats)-20:]); err != nil {
				return err
			}
			seats = seats[:len(seats)-20]
		}
		fast, ref := b.rep.holdsAt(c)
		lvl := &HoldLevel{Buyers: c, Base: fast, Ref: ref}
		lvl.HTTP = b.load.closedLoop(ctx, []*server{s}, b.fx.buyers[:c], ev, seats, b.cfg.warmup, b.cfg.duration, nil)
		m, err := s.metrics(ctx)
		if err == nil && m[`seatd_hold_success_total{path="fast"}`] > 0 {
			lvl.HTTP.Note = "some holds took the fast path"
		}
		lvl.ratios()
		b.rep.Fallback = append(b.rep.Fallback, lvl)
		b.log.printf("fallback %4d buyers: %s", c, lvl.HTTP.summary())
	}
	return nil
}

func (b *bench) tripBreaker(ctx context.Context, s *server, ev string, seats []string) error {
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; ; i++ {
		code, body, err := s.opsGet(ctx, "/readyz") // the ops listener says the hold path; the public one only ready or not
		if err != nil {
			return err
		}
		var ready map[string]string
		_ = json.Unmarshal(body, &ready)
		if code == http.StatusOK && strings.HasPrefix(ready["mode"], "degraded") {
			b.log.printf("fallback process /readyz: %s", strings.TrimSpace(string(body)))
			return nil
		}
		if time.Now().After(deadline) || i >= len(seats) {
			return fmt.Errorf("breaker did not open: /readyz %d %s", code, body)
		}
		if code, _, err := s.hold(ctx, b.fx.buyers[0], ev, seats[i]); err != nil || code != http.StatusCreated {
			return fmt.Errorf("hold while tripping the breaker: %d %v", code, err)
		}
	}
}

// LiveAcross is live fan-out through the balancer: sockets opened through
// haproxy land on every process, holds go through it too, and each hold
// is timed to the frame at every socket, whichever process serves it.
type LiveAcross struct {
	Procs     int     `json:"procs"`
	Sockets   int     `json:"sockets"`
	Holds     int     `json:"holds"`
	Latency   Latency `json:"latency"`
	Missed    int     `json:"missed"`
	Expected  int     `json:"expected"`
	OthersCPU float64 `json:"others_cpu_share"`
}

// liveAcross opens n sockets through the balancer on a fresh event and
// times holds (through the balancer) to their frames at every socket.
func (b *bench) liveAcross(ctx context.Context, via *server, procs, n, holds int) (*LiveAcross, error) {
	ev, seats, err := b.fx.newEvent(ctx, "live across", 1000, false)
	if err != nil {
		return nil, err
	}
	la := &LiveAcross{Procs: procs, Holds: min(holds, len(seats))}
	lat := make([][]float32, n)
	var cur atomic.Pointer[probe]
	var readers sync.WaitGroup
	var conns []*websocket.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
		readers.Wait()
	}()
	for i := range n {
		conn, err := dialLive(ctx, via, b.fx.buyers[1+i%b.cfg.wsSessions], ev)
		if err != nil {
			return nil, fmt.Errorf("socket %d through haproxy: %w", i, err)
		}
		conns = append(conns, conn)
		lat[i] = make([]float32, la.Holds)
		for k := range lat[i] {
			lat[i][k] = -1
		}
		var states []seatState
		readers.Go(func() {
			readFrames(conn, func(at time.Time, frame []byte) {
				p := cur.Load()
				if p == nil || lat[i][p.k] >= 0 {
					return
				}
				states = parseFrame(frame, states)
				for _, st := range states {
					if st.id == p.seat && st.status == "held" {
						lat[i][p.k] = float32(ms(at.Sub(p.t0)))
						p.arrived()
						return
					}
				}
			})
		})
	}
	la.Sockets = len(conns)
	// Sockets join their topic after the upgrade answers.
	time.Sleep(time.Second)
	cpu0 := b.procs.sampleCPU(nil)
	for k := range la.Holds {
		p := &probe{k: k, seat: seats[k], done: make(chan struct{})}
		p.remaining.Store(int64(n))
		p.t0 = time.Now()
		cur.Store(p)
		code, _, err := via.hold(ctx, b.fx.buyers[0], ev, seats[k])
		if err != nil || code != http.StatusCreated {
			return nil, fmt.Errorf("hold through haproxy: %d %v", code, err)
		}
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		time.Sleep(50 * time.Millisecond)
	}
	la.OthersCPU = round3(cpu0.to(b.procs.sampleCPU(nil)).otherShare())
	cur.Store(nil)
	var all []float64
	for i := range lat {
		for _, v := range lat[i] {
			if v >= 0 {
				all = append(all, float64(v))
			} else {
				la.Missed++
			}
		}
	}
	la.Expected = n * la.Holds
	la.Latency = latencyOf(all)
	return la, nil
}
