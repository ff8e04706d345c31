package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
)

// errNoLiveRoute means the process has no live socket route (404).
var errNoLiveRoute = errors.New("no live socket route")

// Seat elements in live frames: id="seat-<uuid>" with data-status and
// data-version, attributes in any order.
var (
	seatTagRE = regexp.MustCompile(`<[a-zA-Z][a-zA-Z0-9]*\s[^>]*\bid="seat-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"[^>]*>`)
	statusRE  = regexp.MustCompile(`\bdata-status="([a-z]+)"`)
	versionRE = regexp.MustCompile(`\bdata-version="([0-9]+)"`)
)

// parseFrame returns the seat states a live frame carries (cart fragments
// and anything else without a seat id are ignored).
func parseFrame(b []byte) map[uuid.UUID]seatState {
	out := map[uuid.UUID]seatState{}
	for _, m := range seatTagRE.FindAllSubmatch(b, -1) {
		tag := m[0]
		st := statusRE.FindSubmatch(tag)
		ver := versionRE.FindSubmatch(tag)
		if st == nil || ver == nil {
			continue
		}
		id, err := uuid.ParseBytes(m[1])
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(string(ver[1]), 10, 64)
		if err != nil {
			continue
		}
		out[id] = seatState{Status: string(st[1]), Version: v}
	}
	return out
}

// watcher is a browser's seat map on one process: it opens the live
// socket, then loads the map over HTTP (so no change falls between the
// two), and applies every frame whose version is newer than what it shows.
// It reconnects whenever the socket ends, as the page script does.
type watcher struct {
	c  *cluster
	n  *node
	cl *client

	mu   sync.Mutex
	view map[uuid.UUID]seatState

	frames     atomic.Int64
	sessions   atomic.Int64
	connected  atomic.Bool
	lastErr    atomic.Value // string
	closeCodes sync.Map     // close code -> count
	noRoute    atomic.Bool
}

func newWatcher(c *cluster, n *node, cl *client) *watcher {
	return &watcher{c: c, n: n, cl: cl, view: map[uuid.UUID]seatState{}}
}

// run keeps the watcher connected until ctx ends.
func (w *watcher) run(ctx context.Context) {
	for ctx.Err() == nil {
		err := w.session(ctx)
		w.connected.Store(false)
		if errors.Is(err, errNoLiveRoute) {
			w.noRoute.Store(true)
			return
		}
		if err != nil {
			w.lastErr.Store(err.Error())
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (w *watcher) session(ctx context.Context) error {
	d := websocket.Dialer{Jar: w.cl.jar, HandshakeTimeout: 3 * time.Second}
	hdr := http.Header{"Origin": {"http://" + w.n.addr}}
	conn, resp, err := d.DialContext(ctx, "ws://"+w.n.addr+"/live/events/"+w.c.event.ID.String(), hdr)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return errNoLiveRoute
		}
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	w.sessions.Add(1)

	frames := make(chan []byte, 4096)
	readErr := make(chan error, 1)
	go func() {
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					v, _ := w.closeCodes.LoadOrStore(ce.Code, new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
				}
				readErr <- err
				close(frames)
				return
			}
			frames <- b
		}
	}()
	// The map is read after the socket is up: frames that arrive meanwhile
	// wait in the channel and are merged by version.
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	seats, err := w.cl.seats(lctx, w.n, w.c.event.ID)
	cancel()
	if err != nil {
		return fmt.Errorf("load map: %w", err)
	}
	w.merge(seats)
	w.connected.Store(true)
	for b := range frames {
		w.frames.Add(1)
		w.merge(parseFrame(b))
	}
	return <-readErr
}

func (w *watcher) merge(m map[uuid.UUID]seatState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, s := range m {
		if cur, ok := w.view[id]; !ok || s.Version > cur.Version {
			w.view[id] = s
		}
	}
}

func (w *watcher) snapshot() map[uuid.UUID]seatState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.view)
}

func (w *watcher) closeCount(code int) int64 {
	v, ok := w.closeCodes.Load(code)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

// watchers runs k watchers per process until the returned stop is called.
// It reports false if the processes have no live route yet.
func startWatchers(c *cluster, cls []*client) ([]*watcher, func(), bool) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ws []*watcher
	for i, cl := range cls {
		w := newWatcher(c, c.nodes[i%len(c.nodes)], cl)
		ws = append(ws, w)
		wg.Go(func() { w.run(ctx) })
	}
	stop := func() { cancel(); wg.Wait() }
	// Wait for every watcher to have its first map (or to find no route).
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		ready := 0
		for _, w := range ws {
			if w.noRoute.Load() {
				stop()
				return nil, func() {}, false
			}
			if w.connected.Load() {
				ready++
			}
		}
		if ready == len(ws) {
			break
		}
		time.Sleep(20 * time.Millisecond) // poll interval of the connection wait
	}
	return ws, stop, true
}
