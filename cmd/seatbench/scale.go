package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"seatd/internal/freeport"
)

// phaseMulti spreads -multi-buyers buyers round-robin over 2 and 3 seatd
// processes sharing one Redis and one Postgres.
func (b *bench) phaseMulti(ctx context.Context) error {
	main, err := b.mainServer(ctx)
	if err != nil {
		return err
	}
	defer b.stopNamed("extra1", "extra2", "extra3", "extra4")
	c := b.cfg.multiBuyers
	if c > len(b.fx.buyers) {
		return fmt.Errorf("%d buyers asked, %d created", c, len(b.fx.buyers))
	}
	base, ref := b.levelResults(c)
	servers := []*server{main}
	for _, n := range b.cfg.multiProcs {
		for len(servers) < n {
			s, err := b.startServer(ctx, fmt.Sprintf("extra%d", len(servers)), nil)
			if err != nil {
				return err
			}
			servers = append(servers, s)
		}
		ev, seats, err := b.genEvent(ctx, fmt.Sprintf("multi %d", n), b.cfg.eventSeats, false)
		if err != nil {
			return err
		}
		if err := b.warmEvent(ctx, servers[:n], ev); err != nil {
			return err
		}
		lvl := &HoldLevel{Buyers: c, Base: base, Ref: ref}
		lvl.HTTP = b.holdLoad(ctx, servers[:n], b.fx.buyers[:c], ev, seats, b.cfg.warmup, b.cfg.duration, nil)
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
	lb, err := b.startBalancer(ctx, servers)
	if err != nil {
		return err
	}
	defer lb.stop()
	ev, seats, err := b.genEvent(ctx, fmt.Sprintf("haproxy %d", len(servers)), b.cfg.eventSeats, false)
	if err != nil {
		return err
	}
	if err := b.warmEvent(ctx, servers, ev); err != nil {
		return err
	}
	lb0, _, _ := procCPU(lb.pid, false)
	lvl := &HoldLevel{Buyers: c, Base: base, Ref: ref, Balanced: true}
	lvl.HTTP = b.holdLoad(ctx, lb.through(servers), b.fx.buyers[:c], ev, seats, b.cfg.warmup, b.cfg.duration, nil)
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

// levelResults returns the fast-path and pgbench results of the holds
// phase at c buyers, if it ran.
func (b *bench) levelResults(c int) (fast, ref *Load) {
	for _, h := range b.rep.Holds {
		if h.Buyers == c {
			return h.HTTP, h.Ref
		}
	}
	return nil, nil
}

// phaseFallback runs the distinct-seat load against a seatd whose Redis
// is a closed loopback port: the breaker opens and every hold takes the
// Postgres-only path (NOWAIT row lock, transaction, NOTIFY).
func (b *bench) phaseFallback(ctx context.Context) error {
	// Nothing else runs meanwhile.
	b.stopNamed("main")
	port, err := freeport.Loopback()
	if err != nil {
		return err
	}
	s, err := b.startServer(ctx, "fallback", map[string]string{"REDIS_URL": fmt.Sprintf("redis://127.0.0.1:%d/0", port)})
	if err != nil {
		return err
	}
	defer b.stopServer(s)
	for i, c := range b.cfg.fallback {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if c > len(b.fx.buyers) {
			return fmt.Errorf("%d buyers asked, %d created", c, len(b.fx.buyers))
		}
		ev, seats, err := b.genEvent(ctx, fmt.Sprintf("fallback %d", c), b.cfg.eventSeats, false)
		if err != nil {
			return err
		}
		if err := b.warmEvent(ctx, []*server{s}, ev); err != nil {
			return err
		}
		if i == 0 {
			// A few holds trip the breaker; then /readyz must say degraded.
			if err := b.tripBreaker(ctx, s, ev, seats[len(seats)-20:]); err != nil {
				return err
			}
			seats = seats[:len(seats)-20]
		}
		fast, ref := b.levelResults(c)
		lvl := &HoldLevel{Buyers: c, Base: fast, Ref: ref}
		lvl.HTTP = b.holdLoad(ctx, []*server{s}, b.fx.buyers[:c], ev, seats, b.cfg.warmup, b.cfg.duration, nil)
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
		code, body, err := s.call(ctx, nil, http.MethodGet, "/readyz", nil)
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
