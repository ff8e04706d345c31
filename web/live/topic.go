package live

import (
	"slices"
	"sync"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
)

// frame is one WebSocket text message, kept as pieces so a buyer's variant
// can reuse the shared generic bytes around its own seats instead of
// copying them. Frames are shared between clients and never changed.
type frame [][]byte

// topic is the clients of one event in this process and the watch feeding
// them.
type topic struct {
	key topicKey

	// ready is closed once the watch has been attempted; cancelWatch and
	// err are written before that and only read after it.
	ready       chan struct{}
	cancelWatch func()
	err         error

	wake chan struct{} // capacity 1: "pending is not empty"
	quit chan struct{} // closed after the last client left

	mu      sync.Mutex // guards clients and users
	clients map[*client]struct{}
	users   map[uuid.UUID]int // clients per user, to skip unneeded mine renders

	// pmu guards the changes not yet rendered. It is separate from mu so
	// the watch function, which runs on the committing goroutine, never
	// waits for a fan-out.
	pmu     sync.Mutex
	stopped bool
	// pending holds at most one delta per seat, the newest, so it is
	// bounded by the event's size however far the pump falls behind.
	pending map[uuid.UUID]hold.Delta
	order   []uuid.UUID // pending seats in arrival order

	// seen is the newest version sent per seat, so a delta that lost a
	// race to a newer one is not sent at all. Only the pump touches it.
	seen map[uuid.UUID]int64
}

func newTopic(key topicKey) *topic {
	return &topic{
		key:     key,
		ready:   make(chan struct{}),
		wake:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		clients: map[*client]struct{}{},
		users:   map[uuid.UUID]int{},
		pending: map[uuid.UUID]hold.Delta{},
		seen:    map[uuid.UUID]int64{},
	}
}

// start records the outcome of the watch and releases waiting joiners.
func (t *topic) start(cancel func(), err error) {
	t.cancelWatch, t.err = cancel, err
	close(t.ready)
}

// stop ends the topic after its last client left. The watch function may
// still be running or be called once more (the core does not wait for
// callbacks in flight when a watch is cancelled), so push must stay
// harmless afterwards: it finds stopped set and returns.
func (t *topic) stop() {
	<-t.ready
	t.pmu.Lock()
	t.stopped = true
	t.pending, t.order = nil, nil
	t.pmu.Unlock()
	close(t.quit)
	if t.cancelWatch != nil {
		t.cancelWatch()
	}
}

func (t *topic) add(c *client) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clients[c] = struct{}{}
	t.users[c.v.Actor.User]++
}

// remove takes c out and reports whether it was in and whether the topic
// is now empty.
func (t *topic) remove(c *client) (removed, last bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.clients[c]; !ok {
		return false, false
	}
	delete(t.clients, c)
	u := c.v.Actor.User
	if t.users[u]--; t.users[u] <= 0 {
		delete(t.users, u)
	}
	return true, len(t.clients) == 0
}

func (t *topic) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clients)
}

// push is the function given to Source.Watch. It runs on the goroutine
// that applied the change, possibly on several at once, so it only records
// the deltas and wakes the pump: it never renders, sends or waits for
// anything but pmu.
func (t *topic) push(ds []hold.Delta) {
	t.pmu.Lock()
	if t.stopped {
		t.pmu.Unlock()
		return
	}
	for _, d := range ds {
		// The core filters by tenant already; a delta of another event
		// must still never reach these clients.
		if d.Org != t.key.org || d.Event != t.key.event {
			continue
		}
		if p, ok := t.pending[d.Seat]; ok {
			if d.Version > p.Version {
				t.pending[d.Seat] = d
			}
			continue
		}
		t.pending[d.Seat] = d
		t.order = append(t.order, d.Seat)
	}
	t.pmu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default: // the pump is already due to run
	}
}

// take empties pending, in arrival order.
func (t *topic) take() []hold.Delta {
	t.pmu.Lock()
	defer t.pmu.Unlock()
	if len(t.order) == 0 {
		return nil
	}
	ds := make([]hold.Delta, len(t.order))
	for i, s := range t.order {
		ds[i] = t.pending[s]
	}
	clear(t.pending)
	t.order = t.order[:0]
	return ds
}

// pump renders and fans out the topic's changes until the topic stops or
// the hub shuts down.
func (h *Hub) pump(t *topic) {
	for {
		select {
		case <-t.quit:
			return
		case <-h.ctx.Done():
			return
		case <-t.wake:
			h.flush(t)
		}
	}
}

// flush renders the pending deltas once per variant and offers the frames
// to every client without waiting; a client whose queue is full is dropped.
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

	// The mine variant is rendered only for holders with a socket here.
	t.mu.Lock()
	var mineUsers map[uuid.UUID][]int // user -> indexes into ds
	for i, d := range ds {
		if d.Status == store.Held && d.UserID != uuid.Nil && t.users[d.UserID] > 0 {
			if mineUsers == nil {
				mineUsers = map[uuid.UUID][]int{}
			}
			mineUsers[d.UserID] = append(mineUsers[d.UserID], i)
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
	// fragments swapped for the mine variant, in the same order.
	var byUser map[uuid.UUID]frame
	if len(mineUsers) > 0 {
		byUser = make(map[uuid.UUID]frame, len(mineUsers))
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
	}

	var slow []*client
	t.mu.Lock()
	for c := range t.clients {
		f := generic
		if uf, ok := byUser[c.v.Actor.User]; ok {
			f = uf
		}
		if len(f) == 0 || (len(f) == 1 && len(f[0]) == 0) {
			continue
		}
		if !c.offer(f) {
			slow = append(slow, c)
		}
	}
	t.mu.Unlock()
	for _, c := range slow {
		h.drop(c)
	}
}
