package live

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
)

// The topic's pumps: each renders the pending changes of its topic once
// per variant and fans the frames out to the topic's clients, buyers'
// (pump) and staff's (staffPump) apart.

// pump renders and fans out the topic's changes, at most one batch per
// Options.Tick, until the topic stops or the hub shuts down: the first
// change after a quiet tick at once, those that come while a tick runs
// together at its end.
func (h *Hub) pump(t *topic) {
	var last time.Time
	for {
		select {
		case <-t.quit:
			return
		case <-h.ctx.Done():
			return
		case <-t.wake:
		}
		if !t.hasPending() {
			continue // the flush since this wake took its changes
		}
		if !h.waitTick(t, last, h.opt.Tick) {
			return
		}
		last = time.Now()
		h.flush(t)
	}
}

// waitTick waits until tick has passed since last; false when the topic
// stops or the hub shuts down meanwhile.
func (h *Hub) waitTick(t *topic, last time.Time, tick time.Duration) bool {
	wait := tick - time.Since(last)
	if wait <= 0 {
		return true
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-t.quit:
		return false
	case <-h.ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// flush renders the pending deltas once per variant and offers the frames
// to every seat-map client without waiting; a client whose queue is full
// is dropped. Variants: the generic frame; a holder's, with their seats'
// mine fragments; a former holder's, with a notice appended when someone
// else released their hold.
func (h *Hub) flush(t *topic) {
	ds := slices.DeleteFunc(t.take(), func(d hold.Delta) bool {
		if v, ok := t.seen[d.Seat]; ok && d.Version <= v {
			return true
		}
		t.seen[d.Seat] = d.Version
		return false
	})
	if len(ds) == 0 {
		return
	}
	var oldest time.Time // the commit of the oldest change, for the propagation metric
	for _, d := range ds {
		if !d.At.IsZero() && (oldest.IsZero() || d.At.Before(oldest)) {
			oldest = d.At
		}
	}

	// Who held each seat before this batch, for notices; then remember the
	// new holders.
	var notice func(hold.Delta) []byte
	if t.staff != nil {
		notice = t.staff.Notice
	}
	var former map[int]uuid.UUID // index into ds -> the holder the change took the seat from
	for i, d := range ds {
		prev, had := t.holders[d.Seat]
		if d.PrevUser != uuid.Nil {
			// The core says whose hold it was: right even when this
			// process never saw the hold begin.
			prev, had = d.PrevUser, true
		}
		if d.Status == store.Held && d.UserID != uuid.Nil {
			t.holders[d.Seat] = d.UserID
			continue
		}
		delete(t.holders, d.Seat)
		if had && notice != nil && d.Kind == hold.KindReleased && d.Actor != prev {
			if former == nil {
				former = map[int]uuid.UUID{}
			}
			former[i] = prev
		}
	}

	// The mine and notice variants are rendered only for users with a
	// seat-map socket here.
	t.mu.Lock()
	if t.streams[StreamSeats] == 0 {
		t.mu.Unlock()
		return
	}
	var mineUsers map[uuid.UUID][]int // user -> indexes into ds
	for i, d := range ds {
		if d.Status == store.Held && d.UserID != uuid.Nil && t.users[d.UserID] > 0 {
			if mineUsers == nil {
				mineUsers = map[uuid.UUID][]int{}
			}
			mineUsers[d.UserID] = append(mineUsers[d.UserID], i)
		}
	}
	var noticeUsers map[uuid.UUID][]int
	for i, u := range former {
		if t.users[u] > 0 {
			if noticeUsers == nil {
				noticeUsers = map[uuid.UUID][]int{}
			}
			noticeUsers[u] = append(noticeUsers[u], i)
		}
	}
	t.mu.Unlock()

	// Render without locks: joins and pushes go on meanwhile.
	var buf []byte
	offs := make([]int, len(ds)+1) // fragment i is buf[offs[i]:offs[i+1]]
	for i, d := range ds {
		offs[i] = len(buf)
		buf = append(buf, h.r.Render(d, false)...)
	}
	offs[len(ds)] = len(buf)
	generic := frame{buf}
	// A holder's frame is the generic one with each of their seats'
	// fragments swapped for the mine variant, in the same order; a former
	// holder's has the notices appended.
	var byUser map[uuid.UUID]frame
	if len(mineUsers)+len(noticeUsers) > 0 {
		byUser = make(map[uuid.UUID]frame, len(mineUsers)+len(noticeUsers))
		for u, idx := range mineUsers {
			f := make(frame, 0, 2*len(idx)+1)
			prev := 0
			for _, i := range idx {
				if offs[i] > prev {
					f = append(f, buf[prev:offs[i]:offs[i]])
				}
				if m := h.r.Render(ds[i], true); len(m) > 0 {
					f = append(f, m)
				}
				prev = offs[i+1]
			}
			if prev < len(buf) {
				f = append(f, buf[prev:len(buf):len(buf)])
			}
			byUser[u] = f
		}
		notices := map[int][]byte{} // rendered once per change
		for u, idx := range noticeUsers {
			slices.Sort(idx) // in the batch's order
			f, ok := byUser[u]
			if !ok {
				f = frame{buf[:len(buf):len(buf)]}
			}
			for _, i := range idx {
				n, ok := notices[i]
				if !ok {
					n = notice(ds[i])
					notices[i] = n
				}
				if len(n) > 0 {
					f = append(f, n)
				}
			}
			byUser[u] = f
		}
	}

	var slow []*client
	t.mu.Lock()
	for c := range t.clients {
		if c.v.Stream != StreamSeats {
			continue
		}
		f := generic
		if uf, ok := byUser[c.v.Actor.User]; ok {
			f = uf
		}
		if len(f) == 0 || (len(f) == 1 && len(f[0]) == 0) {
			continue
		}
		if !c.offer(f, oldest) {
			h.metrics.dropped[c.v.Stream].Inc()
			slow = append(slow, c)
		}
	}
	t.mu.Unlock()
	for _, c := range slow {
		h.drop(c)
	}
}

// staffPump renders the staff frames of a topic, at most one batch per
// staff.Interval, until the topic stops or the hub shuts down. It runs
// apart from pump, so a slow staff render (it may query Postgres) never
// delays buyers' frames.
func (h *Hub) staffPump(t *topic) {
	var last time.Time
	for {
		select {
		case <-t.quit:
			return
		case <-h.ctx.Done():
			return
		case <-t.swake:
		}
		if !h.waitTick(t, last, t.staff.Interval) {
			return
		}
		last = time.Now()
		h.flushStaff(t)
	}
}

// flushStaff renders the staff frames of the pending changes once per
// staff stream with clients here, and offers each to that stream's
// clients; a client whose queue is full is dropped.
func (h *Hub) flushStaff(t *topic) {
	b := t.takeStaff()
	b.Seats = slices.DeleteFunc(b.Seats, func(d hold.Delta) bool {
		if v, ok := t.staffSeen[d.Seat]; ok && d.Version <= v {
			return true
		}
		t.staffSeen[d.Seat] = d.Version
		return false
	})
	if len(b.Changes) == 0 {
		return
	}
	t.mu.Lock()
	streams := t.streams
	t.mu.Unlock()
	var frames [numStreams]frame
	for s := StreamDashboard; s < numStreams; s++ {
		if streams[s] == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(h.ctx, t.staff.RenderTimeout)
		if out := t.staff.Renderer.RenderStaff(ctx, s, b); len(out) > 0 {
			frames[s] = frame{out}
		}
		cancel()
	}

	var slow []*client
	t.mu.Lock()
	for c := range t.clients {
		// Staff frames carry holders' emails: only staff sockets get them,
		// whatever the route let through.
		if !c.v.Stream.Staff() || !staffRole(c.v.Actor.Role) || frames[c.v.Stream] == nil {
			continue
		}
		if !c.offer(frames[c.v.Stream], time.Time{}) {
			h.metrics.dropped[c.v.Stream].Inc()
			slow = append(slow, c)
		}
	}
	t.mu.Unlock()
	for _, c := range slow {
		h.drop(c)
	}
}
