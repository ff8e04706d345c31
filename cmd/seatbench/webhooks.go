package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Webhooks is the webhook delivery run: commit-to-delivery latency at a
// steady change rate, then a receiver down for a while and back.
type Webhooks struct {
	Offered  float64 `json:"offered_changes_per_s"`
	Achieved float64 `json:"achieved_changes_per_s"`
	Changes  int     `json:"changes"`
	// Latency is from the change (its transaction's time, as the delivery
	// says in created_at) to the receiver reading the delivery.
	Latency Latency `json:"commit_to_delivery"`

	OutageSeconds float64 `json:"outage_seconds"`
	OutageChanges int     `json:"outage_changes"`
	// DrainSeconds is from the receiver's return to the last delivery.
	DrainSeconds float64 `json:"drain_seconds"`

	Expected   int `json:"expected"`
	Delivered  int `json:"delivered"` // distinct deliveries received
	Lost       int `json:"lost"`
	Reordered  int `json:"reordered"` // seats whose deliveries arrived out of order
	Duplicates int `json:"duplicates"`
}

// hookReceiver is the bench's webhook endpoint on loopback.
type hookReceiver struct {
	addr string
	mu   sync.Mutex
	srv  *http.Server
	seen map[string]bool
	// perSeat is each seat's deliveries in the order first received.
	perSeat map[string][]hookGot
	lat     []float64
	dups    int
	last    time.Time
	measure bool
}

type hookGot struct {
	typ string
	at  time.Time
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	body, err := io.ReadAll(r.Body)
	var d struct {
		ID        string    `json:"id"`
		Type      string    `json:"type"`
		CreatedAt time.Time `json:"created_at"`
		Data      struct {
			SeatID string `json:"seat_id"`
		} `json:"data"`
	}
	if err != nil || json.Unmarshal(body, &d) != nil || r.Header.Get("Seatd-Signature") == "" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen[d.ID] {
		h.dups++
		return
	}
	h.seen[d.ID] = true
	h.perSeat[d.Data.SeatID] = append(h.perSeat[d.Data.SeatID], hookGot{typ: d.Type, at: d.CreatedAt})
	h.last = now
	if h.measure {
		h.lat = append(h.lat, ms(now.Sub(d.CreatedAt)))
	}
}

// start listens on h.addr (a fresh port the first time).
func (h *hookReceiver) start() error {
	addr := h.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h.addr = ln.Addr().String()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	h.mu.Lock()
	h.srv = srv
	h.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// stop closes the listener and every connection: the receiver is down.
func (h *hookReceiver) stop() {
	h.mu.Lock()
	srv := h.srv
	h.mu.Unlock()
	_ = srv.Close()
}

func (h *hookReceiver) distinct() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

// phaseWebhooks registers the bench's receiver for seat.blocked and
// seat.unblocked, makes changes (block, unblock, ... per seat through the
// API) at -webhook-rate for -duration and measures commit to delivery;
// then stops the receiver for -webhook-outage while changes go on at a
// fifth of the rate, starts it again on the same port, and waits for
// every delivery, checking none is lost and each seat's arrive in order.
func (b *bench) phaseWebhooks(ctx context.Context) error {
	main, err := b.procs.mainServer(ctx)
	if err != nil {
		return err
	}
	const seatsN, workers = 500, 50
	ev, seats, err := b.fx.newEvent(ctx, "webhooks", seatsN, false)
	if err != nil {
		return err
	}
	rcv := &hookReceiver{seen: map[string]bool{}, perSeat: map[string][]hookGot{}}
	if err := rcv.start(); err != nil {
		return err
	}
	defer rcv.stop()
	code, body, err := main.call(ctx, b.fx.organizer, http.MethodPost, "/api/v1/webhooks",
		[]byte(fmt.Sprintf(`{"url":"http://%s/hook","events":["seat.blocked","seat.unblocked"]}`, rcv.addr)))
	if err != nil || code != http.StatusCreated {
		return fmt.Errorf("register webhook: %d %s %v", code, body, err)
	}
	var hook struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &hook); err != nil {
		return err
	}
	// Other phases must not pay for deliveries.
	defer func() {
		_, _, _ = main.call(context.WithoutCancel(ctx), b.fx.organizer, http.MethodDelete, "/api/v1/webhooks/"+hook.ID, nil)
	}()

	blocked := make([]bool, len(seats))
	// drive makes changes at rate for d: each worker owns seats w, w+workers, ...
	// and toggles them in turn, so no seat has two changes in flight.
	drive := func(rate float64, d time.Duration) (int, error) {
		var n, failed int
		var mu sync.Mutex
		var wg sync.WaitGroup
		every := time.Duration(float64(time.Second) * workers / rate)
		end := time.Now().Add(d)
		for w := range workers {
			wg.Go(func() {
				t := time.NewTicker(every)
				defer t.Stop()
				for i := w; time.Now().Before(end) && ctx.Err() == nil; i += workers {
					if i >= len(seats) {
						i = w
					}
					op := "block"
					if blocked[i] {
						op = "unblock"
					}
					c, _, err := main.call(ctx, b.fx.organizer, http.MethodPost, "/api/v1/events/"+ev+"/seats/"+seats[i]+"/"+op, nil)
					mu.Lock()
					if err == nil && c == http.StatusOK {
						blocked[i] = !blocked[i]
						n++
					} else {
						failed++
					}
					mu.Unlock()
					<-t.C
				}
			})
		}
		wg.Wait()
		if failed > 0 {
			return n, fmt.Errorf("%d changes failed", failed)
		}
		return n, ctx.Err()
	}

	wh := &Webhooks{Offered: b.cfg.webhookRate}
	rcv.mu.Lock()
	rcv.measure = true
	rcv.mu.Unlock()
	start := time.Now()
	n, err := drive(b.cfg.webhookRate, b.cfg.duration)
	if err != nil {
		return err
	}
	wh.Changes, wh.Achieved = n, round3(float64(n)/time.Since(start).Seconds())
	if err := waitFor(ctx, 30*time.Second, func() bool { return rcv.distinct() >= n }); err != nil {
		return fmt.Errorf("latency run: %d of %d delivered: %w", rcv.distinct(), n, err)
	}
	rcv.mu.Lock()
	rcv.measure = false
	wh.Latency = latencyOf(rcv.lat)
	rcv.mu.Unlock()
	b.log.printf("webhooks: %d changes at %.0f/s; commit → delivery p50 %.0f ms, p99 %.0f ms", n, wh.Achieved, wh.Latency.P50, wh.Latency.P99)

	rcv.stop()
	down := time.Now()
	m, err := drive(b.cfg.webhookRate/5, b.cfg.webhookOutage)
	if err != nil {
		return err
	}
	if rest := b.cfg.webhookOutage - time.Since(down); rest > 0 {
		time.Sleep(rest)
	}
	wh.OutageChanges = m
	wh.OutageSeconds = round3(time.Since(down).Seconds())
	if err := rcv.start(); err != nil {
		return fmt.Errorf("restart receiver on %s: %w", rcv.addr, err)
	}
	back := time.Now()
	wh.Expected = n + m
	waitErr := waitFor(ctx, 5*time.Minute, func() bool { return rcv.distinct() >= wh.Expected })
	rcv.mu.Lock()
	wh.Delivered, wh.Duplicates = len(rcv.seen), rcv.dups
	wh.DrainSeconds = round3(rcv.last.Sub(back).Seconds())
	for _, got := range rcv.perSeat {
		for i, g := range got {
			want := "seat.blocked"
			if i%2 == 1 {
				want = "seat.unblocked"
			}
			if g.typ != want || (i > 0 && g.at.Before(got[i-1].at)) {
				wh.Reordered++
				break
			}
		}
	}
	rcv.mu.Unlock()
	wh.Lost = wh.Expected - wh.Delivered
	b.rep.Webhooks = wh
	b.log.printf("webhooks: receiver down %.0f s during %d changes; back: all %d of %d delivered %.1f s later, %d seats out of order, %d repeats",
		wh.OutageSeconds, m, wh.Delivered, wh.Expected, wh.DrainSeconds, wh.Reordered, wh.Duplicates)
	return waitErr
}

// waitFor polls cond until it holds or d passes.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) error {
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			return errors.New("timed out")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}
