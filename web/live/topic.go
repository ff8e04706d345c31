package live

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"seatd/internal/hold"
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

	// staff is the hub's staff settings when the topic started (nil: no
	// staff streams).
	staff *StaffOptions
	// wl is the hub's waitlist settings when the topic started (nil: no
	// live waitlist panels).
	wl *WaitlistOptions

	mu      sync.Mutex // guards clients, users and streams
	clients map[*client]struct{}
	users   map[uuid.UUID]int // seat-map clients per user, to skip unneeded mine renders
	streams [numStreams]int   // clients per stream
	// staffN is the number of staff clients, read without mu by push.
	staffN atomic.Int32

	// pmu guards the changes not yet rendered. It is separate from mu so
	// the watch function, which runs on the committing goroutine, never
	// waits for a fan-out.
	pmu     sync.Mutex
	stopped bool
	// pending holds the newest delta per seat, so it is bounded by the
	// event's size however far the pump falls behind.
	pending newestBySeat

	// The staff side's changes not yet rendered, also guarded by pmu and
	// recorded only while staff clients are here. Unlike pending they keep
	// every change for feeds (the newest staff.FeedSize of them), besides
	// the newest change per seat.
	staffFeed    []hold.Delta
	staffDropped int
	staffLatest  newestBySeat
	swake        chan struct{} // capacity 1: the staff pump has work

	// The waitlist changes not yet rendered, also guarded by pmu: whether
	// the whole line moved, and whose own entries changed.
	lineAll   bool
	lineUsers map[uuid.UUID]struct{}
	lwake     chan struct{} // capacity 1: the line pump has work

	// door is the hub's door settings when the topic started (nil: no
	// live door figures); dwake (capacity 1) says the door pump has work.
	door  *DoorOptions
	dwake chan struct{}

	// seen is the newest version sent per seat, so a delta that lost a
	// race to a newer one is not sent at all. Only the pump touches it.
	seen map[uuid.UUID]int64
	// holders is who holds each held seat, as far as the deltas seen here
	// tell, so a buyer whose hold someone else ends can be told. Only the
	// pump touches it.
	holders map[uuid.UUID]uuid.UUID
	// staffSeen is seen for the staff pump, which alone touches it.
	staffSeen map[uuid.UUID]int64

	// latency is the event's commit → frame histogram (see metrics.go).
	latency prometheus.Histogram
}

func newTopic(key topicKey, staff *StaffOptions, wl *WaitlistOptions, door *DoorOptions) *topic {
	return &topic{
		key:       key,
		staff:     staff,
		wl:        wl,
		door:      door,
		dwake:     make(chan struct{}, 1),
		ready:     make(chan struct{}),
		wake:      make(chan struct{}, 1),
		swake:     make(chan struct{}, 1),
		lwake:     make(chan struct{}, 1),
		lineUsers: map[uuid.UUID]struct{}{},
		quit:      make(chan struct{}),
		clients:   map[*client]struct{}{},
		users:     map[uuid.UUID]int{},
		seen:      map[uuid.UUID]int64{},
		holders:   map[uuid.UUID]uuid.UUID{},
		staffSeen: map[uuid.UUID]int64{},
		latency:   newPropagation(key),
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
	t.pending, t.staffLatest = newestBySeat{}, newestBySeat{}
	t.staffFeed = nil
	t.lineAll, t.lineUsers = false, nil
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
	t.streams[c.v.Stream]++
	if c.v.Stream.Staff() {
		t.staffN.Add(1)
	} else {
		t.users[c.v.Actor.User]++
	}
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
	t.streams[c.v.Stream]--
	if c.v.Stream.Staff() {
		t.staffN.Add(-1)
	} else {
		u := c.v.Actor.User
		if t.users[u]--; t.users[u] <= 0 {
			delete(t.users, u)
		}
	}
	return true, len(t.clients) == 0
}

// size returns the number of clients and how many of them are staff's.
func (t *topic) size() (n, staff int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clients), len(t.clients) - t.streams[StreamSeats]
}

// push is the function given to Source.Watch. It runs on the goroutine
// that applied the change, possibly on several at once, so it only records
// the deltas and wakes the pump: it never renders, sends or waits for
// anything but pmu.
func (t *topic) push(ds []hold.Delta) {
	staff := t.staff != nil && t.staffN.Load() > 0
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
		if staff {
			t.pushStaff(d)
		}
		t.pending.put(d)
	}
	t.pmu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default: // the pump is already due to run
	}
	if staff {
		select {
		case t.swake <- struct{}{}:
		default:
		}
	}
}

// pushStaff records d for the staff pump; pmu must be held.
func (t *topic) pushStaff(d hold.Delta) {
	n := t.staff.FeedSize
	if len(t.staffFeed) >= 2*n {
		// Keep the newest n; trimming in halves keeps appends amortized O(1).
		t.staffDropped += len(t.staffFeed) - n
		t.staffFeed = append(t.staffFeed[:0], t.staffFeed[len(t.staffFeed)-n:]...)
	}
	t.staffFeed = append(t.staffFeed, d)
	t.staffLatest.put(d)
}

// takeStaff empties the staff side's pending changes.
func (t *topic) takeStaff() StaffBatch {
	t.pmu.Lock()
	defer t.pmu.Unlock()
	b := StaffBatch{Org: t.key.org, Event: t.key.event}
	if len(t.staffFeed) == 0 {
		return b
	}
	n := t.staff.FeedSize
	feed := t.staffFeed
	if len(feed) > n {
		b.Dropped = len(feed) - n
		feed = feed[len(feed)-n:]
	}
	b.Dropped += t.staffDropped
	b.Changes = slices.Clone(feed)
	b.Seats = t.staffLatest.take()
	t.staffFeed, t.staffDropped = t.staffFeed[:0], 0
	return b
}

// hasPending says whether pending holds a delta: a wake may be stale (its
// push was taken by the flush that ran since).
func (t *topic) hasPending() bool {
	t.pmu.Lock()
	defer t.pmu.Unlock()
	return len(t.pending.order) > 0
}

// take empties pending, in arrival order.
func (t *topic) take() []hold.Delta {
	t.pmu.Lock()
	defer t.pmu.Unlock()
	return t.pending.take()
}

// newestBySeat keeps the newest delta per seat (by version), in the order
// the seats first arrived.
type newestBySeat struct {
	by    map[uuid.UUID]hold.Delta
	order []uuid.UUID
}

func (n *newestBySeat) put(d hold.Delta) {
	if p, ok := n.by[d.Seat]; ok {
		if d.Version > p.Version {
			n.by[d.Seat] = d
		}
		return
	}
	if n.by == nil {
		n.by = map[uuid.UUID]hold.Delta{}
	}
	n.by[d.Seat] = d
	n.order = append(n.order, d.Seat)
}

// take empties the set and returns its deltas, nil when it is empty.
func (n *newestBySeat) take() []hold.Delta {
	if len(n.order) == 0 {
		return nil
	}
	ds := make([]hold.Delta, len(n.order))
	for i, s := range n.order {
		ds[i] = n.by[s]
	}
	clear(n.by)
	n.order = n.order[:0]
	return ds
}
