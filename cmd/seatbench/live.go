package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Live is the fan-out of holds to many sockets of one process.
type Live struct {
	Clients        int     `json:"clients"`
	Connected      int     `json:"connected"`
	ConnectFailed  int     `json:"connect_failed"`
	ConnectError   string  `json:"connect_error,omitempty"`
	ConnectSeconds float64 `json:"connect_seconds"`
	Holds          int     `json:"holds"`
	// Latency runs from just before the hold request is sent to the
	// arrival, at each client, of the frame showing the seat held.
	Latency    Latency `json:"hold_to_frame"`
	HoldAnswer Latency `json:"hold_answer"` // the same start to the holder's 201
	Expected   int     `json:"frames_expected"`
	Missed     int     `json:"frames_missed"`
	// Server memory per connected idle client, from /metrics and VmRSS
	// before and after connecting.
	HeapPerClientKiB    float64 `json:"heap_per_client_kib"`
	StackPerClientKiB   float64 `json:"stack_per_client_kib"`
	RSSPerClientKiB     float64 `json:"rss_per_client_kib"`
	GoroutinesPerClient float64 `json:"goroutines_per_client"`
	ServerOpenFiles     uint64  `json:"server_open_file_limit"`
	// CPU spent while the holds were fanned out, per frame delivered: the
	// clients share the two cores with the server, so their share is part
	// of the latency measured.
	ServerCPUPerFrameUS float64 `json:"server_cpu_us_per_frame"`
	ClientCPUPerFrameUS float64 `json:"client_cpu_us_per_frame"`
	OthersCPU           float64 `json:"others_cpu_share"` // share of the machine other processes used meanwhile
	// Flash is the same sockets while holds come at a sale's pace.
	Flash *LiveFlash `json:"flash,omitempty"`
}

// Expiry is the time from held_until to the "available" frame on an open
// seat map.
type Expiry struct {
	Holds          int     `json:"holds"`
	TTL            string  `json:"ttl"`
	ReaperInterval string  `json:"reaper_interval"`
	Latency        Latency `json:"held_until_to_frame"`
	Missed         int     `json:"missed"`
}

// seatState is one seat element of a live frame.
type seatState struct {
	id, status string
}

// parseFrame finds every seat element (id="seat-<uuid>") of an HTML frame
// and its data-status.
func parseFrame(b []byte, out []seatState) []seatState {
	out = out[:0]
	marker := []byte(`id="seat-`)
	off := 0
	for {
		i := bytes.Index(b[off:], marker)
		if i < 0 {
			return out
		}
		i += off
		id := i + len(marker)
		if id+36 > len(b) {
			return out
		}
		start := max(bytes.LastIndexByte(b[:i], '<'), 0)
		end := bytes.IndexByte(b[id:], '>')
		if end < 0 {
			end = len(b)
		} else {
			end += id
		}
		out = append(out, seatState{id: string(b[id : id+36]), status: attr(b[start:end], "data-status")})
		off = id + 36
	}
}

func attr(tag []byte, name string) string {
	k := []byte(name + `="`)
	i := bytes.Index(tag, k)
	if i < 0 {
		return ""
	}
	v := tag[i+len(k):]
	j := bytes.IndexByte(v, '"')
	if j < 0 {
		return ""
	}
	return string(v[:j])
}

// dialLive opens an event's live socket with a session, as a browser
// page of that origin would.
func dialLive(ctx context.Context, s *server, sess *session, event string) (*websocket.Conn, error) {
	d := websocket.Dialer{
		NetDialContext:   (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		HandshakeTimeout: 20 * time.Second,
		ReadBufferSize:   4096,
		WriteBufferSize:  512,
	}
	h := http.Header{}
	h.Set("Cookie", sess.cookie)
	h.Set("Origin", s.base)
	conn, resp, err := d.DialContext(ctx, "ws://"+s.addr+"/live/events/"+event, h)
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
			_ = resp.Body.Close()
			return nil, fmt.Errorf("%w: %d %s", err, resp.StatusCode, strings.TrimSpace(string(body)))
		}
		return nil, err
	}
	return conn, nil
}

// readFrames reads text frames until the connection ends, calling f with
// each frame's arrival time and bytes (valid only during the call).
func readFrames(conn *websocket.Conn, f func(at time.Time, frame []byte)) {
	var buf bytes.Buffer
	for {
		_, r, err := conn.NextReader()
		if err != nil {
			return
		}
		at := time.Now()
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return
		}
		f(at, buf.Bytes())
	}
}

// probe is the hold whose frame the clients are waiting for.
type probe struct {
	k         int
	seat      string
	t0        time.Time
	remaining atomic.Int64
	done      chan struct{}
}

func (p *probe) arrived() {
	if p.remaining.Add(-1) == 0 {
		close(p.done)
	}
}

// phaseLive connects -ws-clients sockets to one fresh process, measures
// the server's memory per client, then times -ws-holds holds, one at a
// time, from the request to the frame at every client.
func (b *bench) phaseLive(ctx context.Context) error {
	b.procs.stopNamed("main", "fallback")
	s, err := b.procs.start(ctx, "live", nil)
	if err != nil {
		return err
	}
	defer b.procs.stop(s)
	ev, seats, err := b.fx.newEvent(ctx, "live", 2000, false)
	if err != nil {
		return err
	}
	if err := b.load.warm(ctx, []*server{s}, ev); err != nil {
		return err
	}
	n := b.cfg.wsClients
	l := &Live{Clients: n, Holds: min(b.cfg.wsHolds, len(seats))}
	if lim, err := openFileLimit(s.pid); err == nil {
		l.ServerOpenFiles = lim
		if lim < uint64(n)+1024 {
			b.log.printf("live: seatd may open only %d files for %d sockets (raise the hard ulimit -n)", lim, n)
		}
	}
	if own, err := openFileLimit(os.Getpid()); err == nil && own < uint64(n)+1024 {
		b.log.printf("live: seatbench may open only %d files for %d sockets (raise the hard ulimit -n)", own, n)
	}
	time.Sleep(time.Second)
	before, err := s.memory(ctx)
	if err != nil {
		return err
	}

	var cur atomic.Pointer[probe]
	var flash atomic.Pointer[liveSamples]
	clients := make([]*liveClient, n)
	var readers sync.WaitGroup
	var next, failed atomic.Int64
	var errMu sync.Mutex
	start := time.Now()
	var dialers sync.WaitGroup
	for range 32 {
		dialers.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				sess := b.fx.buyers[1+i%b.cfg.wsSessions]
				conn, err := dialLive(ctx, s, sess, ev)
				if err != nil {
					failed.Add(1)
					errMu.Lock()
					if l.ConnectError == "" {
						l.ConnectError = err.Error()
					}
					errMu.Unlock()
					continue
				}
				c := &liveClient{conn: conn, lat: make([]float32, l.Holds), flashLat: make([]atomic.Int64, flashSamples)}
				for k := range c.lat {
					c.lat[k] = -1
				}
				clients[i] = c
				var states []seatState
				readers.Go(func() {
					defer c.ended.Store(true)
					readFrames(conn, func(at time.Time, frame []byte) {
						if f := flash.Load(); f != nil {
							states = parseFrame(frame, states)
							c.flashFrame(f, at, states)
							return
						}
						p := cur.Load()
						if p == nil || c.lat[p.k] >= 0 {
							return
						}
						states = parseFrame(frame, states)
						for _, st := range states {
							if st.id == p.seat && st.status == "held" {
								c.lat[p.k] = float32(ms(at.Sub(p.t0)))
								p.arrived()
								return
							}
						}
					})
				})
			}
		})
	}
	dialers.Wait()
	l.ConnectSeconds = round3(time.Since(start).Seconds())
	l.ConnectFailed = int(failed.Load())
	l.Connected = n - l.ConnectFailed
	b.log.printf("live: %d of %d sockets connected in %.1fs", l.Connected, n, l.ConnectSeconds)
	defer func() {
		for _, c := range clients {
			if c != nil {
				_ = c.conn.Close()
			}
		}
		readers.Wait()
	}()
	if l.Connected == 0 {
		return fmt.Errorf("no live socket connected: %s", l.ConnectError)
	}
	time.Sleep(2 * time.Second)
	after, err := s.memory(ctx)
	if err != nil {
		return err
	}
	per := func(a, b float64) float64 { return round3((b - a) / float64(l.Connected) / 1024) }
	l.HeapPerClientKiB = per(before.heap, after.heap)
	l.StackPerClientKiB = per(before.stack, after.stack)
	l.RSSPerClientKiB = per(float64(before.rss), float64(after.rss))
	l.GoroutinesPerClient = round3((after.goroutines - before.goroutines) / float64(l.Connected))

	holder := b.fx.buyers[0]
	var answers []float64
	cpu0 := b.procs.sampleCPU([]*server{s})
	for k := range l.Holds {
		if ctx.Err() != nil {
			break
		}
		p := &probe{k: k, seat: seats[k], done: make(chan struct{})}
		p.remaining.Store(int64(l.Connected))
		// t0 is set before the probe is published to the readers, which
		// read it; the request follows at once.
		p.t0 = time.Now()
		cur.Store(p)
		code, _, err := s.hold(ctx, holder, ev, seats[k])
		answers = append(answers, ms(time.Since(p.t0)))
		if err != nil || code != http.StatusCreated {
			return fmt.Errorf("live hold: %d %v", code, err)
		}
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
		}
		time.Sleep(50 * time.Millisecond)
	}
	cpu := cpu0.to(b.procs.sampleCPU([]*server{s}))
	cur.Store(nil)

	// The same sockets while holds come at a sale's pace.
	if l.Flash, err = b.liveFlash(ctx, s, ev, seats[l.Holds:], clients, &flash); err != nil {
		return err
	}

	for _, c := range clients {
		if c != nil {
			_ = c.conn.Close()
		}
	}
	readers.Wait()
	var lat []float64
	for _, c := range clients {
		if c == nil {
			continue
		}
		for _, v := range c.lat {
			if v >= 0 {
				lat = append(lat, float64(v))
			} else {
				l.Missed++
			}
		}
	}
	l.Expected = l.Connected * l.Holds
	l.OthersCPU = round3(cpu.otherShare())
	if got := l.Expected - l.Missed; got > 0 {
		l.ServerCPUPerFrameUS = round3(cpu.Seatd * 1e6 / float64(got))
		l.ClientCPUPerFrameUS = round3(cpu.Client * 1e6 / float64(got))
	}
	l.Latency = latencyOf(lat)
	l.HoldAnswer = latencyOf(answers)
	b.rep.Live = l
	b.log.printf("live: hold → frame at %d clients p50 %.1f p95 %.1f p99 %.1f max %.1f ms, %d missed; memory per client %.1f KiB RSS, %.1f KiB heap, %.1f KiB stacks; CPU µs/frame server %.1f client %.1f",
		l.Connected, l.Latency.P50, l.Latency.P95, l.Latency.P99, l.Latency.Max, l.Missed, l.RSSPerClientKiB,
		l.HeapPerClientKiB, l.StackPerClientKiB, l.ServerCPUPerFrameUS, l.ClientCPUPerFrameUS)
	return nil
}

// phaseExpiry holds seats for 2 seconds on a process started with
// SEATD_HOLD_TTL=2s, spread over a second (so the reaper's phase is
// sampled), and times held_until to the "available" frame at a watcher.
func (b *bench) phaseExpiry(ctx context.Context) error {
	b.procs.stopNamed("main", "fallback", "live")
	const ttl = "2s"
	s, err := b.procs.start(ctx, "expiry", map[string]string{"SEATD_HOLD_TTL": ttl})
	if err != nil {
		return err
	}
	defer b.procs.stop(s)
	ev, seats, err := b.fx.newEvent(ctx, "expiry", 500, false)
	if err != nil {
		return err
	}
	if err := b.load.warm(ctx, []*server{s}, ev); err != nil {
		return err
	}
	conn, err := dialLive(ctx, s, b.fx.organizer, ev)
	if err != nil {
		return fmt.Errorf("watcher: %w", err)
	}
	k := min(b.cfg.expiryHolds, len(seats))
	var mu sync.Mutex
	until := map[string]time.Time{}
	seen := map[string]time.Time{}
	all := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var states []seatState
		readFrames(conn, func(at time.Time, frame []byte) {
			states = parseFrame(frame, states)
			mu.Lock()
			defer mu.Unlock()
			for _, st := range states {
				if _, ok := until[st.id]; ok && st.status == "available" {
					if _, dup := seen[st.id]; !dup {
						seen[st.id] = at
						if len(seen) == k {
							close(all)
						}
					}
				}
			}
		})
	}()
	var last time.Time
	for i := range k {
		code, a, err := s.hold(ctx, b.fx.buyers[i%len(b.fx.buyers)], ev, seats[i])
		if err != nil || code != http.StatusCreated {
			_ = conn.Close()
			return fmt.Errorf("expiry hold: %d %v", code, err)
		}
		mu.Lock()
		until[seats[i]] = a.HeldUntil
		mu.Unlock()
		last = a.HeldUntil
		time.Sleep(time.Second / time.Duration(k))
	}
	select {
	case <-all:
	case <-time.After(time.Until(last.Add(6 * time.Second))):
	case <-ctx.Done():
	}
	_ = conn.Close()
	<-done
	e := &Expiry{Holds: k, TTL: ttl, ReaperInterval: "1s"}
	var lat []float64
	mu.Lock()
	for seat, u := range until {
		if at, ok := seen[seat]; ok {
			lat = append(lat, ms(at.Sub(u)))
		} else {
			e.Missed++
		}
	}
	mu.Unlock()
	e.Latency = latencyOf(lat)
	b.rep.Expiry = e
	b.log.printf("expiry: held_until → available frame p50 %.0f p99 %.0f max %.0f ms, %d missed",
		e.Latency.P50, e.Latency.P99, e.Latency.Max, e.Missed)
	if len(lat) == 0 {
		return errors.New("no expiry frame arrived")
	}
	return nil
}

// openFileLimit is a process's soft RLIMIT_NOFILE, from /proc.
func openFileLimit(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Max open files") {
			f := strings.Fields(l)
			var v uint64
			_, err := fmt.Sscan(f[3], &v)
			return v, err
		}
	}
	return 0, errors.New("no open files limit")
}
