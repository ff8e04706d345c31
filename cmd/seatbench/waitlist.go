package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Waitlist is the time from a freed seat to the offer in the next waiting
// buyer's cart.
type Waitlist struct {
	Frees   int     `json:"frees"`
	Latency Latency `json:"free_to_offer_frame"`
	Missed  int     `json:"missed"`
}

// phaseWaitlist: k buyers hold a seat each (the per-buyer cap allows few),
// k others wait for one seat each with their seat map open; the holders
// release the seats one at a time
// and each release is timed, from just before the release request, to
// the frame on a waiting buyer's socket that puts the seat in their cart
// as an offer.
func (b *bench) phaseWaitlist(ctx context.Context) error {
	b.procs.stopNamed("main", "fallback", "live", "expiry")
	s, err := b.procs.start(ctx, "waitlist", nil)
	if err != nil {
		return err
	}
	defer b.procs.stop(s)
	k := min(b.cfg.waitlistFrees, len(b.fx.buyers)/2)
	ev, seats, err := b.fx.newEvent(ctx, "waitlist", k, false)
	if err != nil {
		return err
	}
	// Generated events are drafts (the events' default): this one sells.
	if _, err := b.db.Exec(ctx, `UPDATE events SET status = 'on_sale' WHERE org_id = $1 AND id = $2`, b.fx.orgID, ev); err != nil {
		return err
	}
	if err := b.load.warm(ctx, []*server{s}, ev); err != nil {
		return err
	}
	holds := make([]string, k)
	for i := range k {
		code, a, err := s.hold(ctx, b.fx.buyers[i], ev, seats[i])
		if err != nil || code != http.StatusCreated {
			return fmt.Errorf("waitlist hold: %d %s %v", code, a.Error, err)
		}
		holds[i] = a.ID
	}
	var mu sync.Mutex
	offered := map[string]time.Time{} // seat → when its offer frame arrived
	var conns []*websocket.Conn
	var wg sync.WaitGroup
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
		wg.Wait()
	}()
	for i := range k {
		buyer := b.fx.buyers[k+i]
		code, body, err := s.call(ctx, buyer, http.MethodPost, "/api/v1/events/"+ev+"/waitlist", []byte(`{"count":1}`))
		if err != nil || code != http.StatusCreated {
			return fmt.Errorf("join waitlist: %d %s %v", code, body, err)
		}
		conn, err := dialLive(ctx, s, buyer, ev)
		if err != nil {
			return fmt.Errorf("waiting buyer's socket: %w", err)
		}
		conns = append(conns, conn)
		wg.Go(func() {
			readFrames(conn, func(at time.Time, frame []byte) {
				if !bytes.Contains(frame, []byte(`data-testid="offer-note"`)) {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, seat := range seats[:k] {
					if _, dup := offered[seat]; !dup && bytes.Contains(frame, []byte(`id="cart-`+seat+`"`)) {
						offered[seat] = at
					}
				}
			})
		})
	}
	w := &Waitlist{Frees: k}
	var lat []float64
	for i := range k {
		start := time.Now()
		code, _, err := s.call(ctx, b.fx.buyers[i], http.MethodDelete, "/api/v1/holds/"+holds[i], nil)
		if err != nil || code != http.StatusNoContent {
			return fmt.Errorf("release: %d %v", code, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		var at time.Time
		for time.Now().Before(deadline) && ctx.Err() == nil {
			mu.Lock()
			at = offered[seats[i]]
			mu.Unlock()
			if !at.IsZero() {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if at.IsZero() {
			w.Missed++
			continue
		}
		lat = append(lat, ms(at.Sub(start)))
	}
	w.Latency = latencyOf(lat)
	b.rep.Waitlist = w
	b.log.printf("waitlist: freed seat → offer frame p50 %.0f p99 %.0f max %.0f ms, %d missed",
		w.Latency.P50, w.Latency.P99, w.Latency.Max, w.Missed)
	if len(lat) == 0 {
		return errors.New("no offer frame arrived")
	}
	return nil
}
