package api

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"seatd/internal/store"
)

// seatsCache keeps the answer of GET /api/v1/events/{event}/seats per
// event, built once per seats version (hold.Events.SeatsVersion) and
// prices, as the JSON body and its gzip: a repeated read of an unchanged
// event costs one read of the hot cache's version, not a serialisation of
// every seat (~40 MB for 200 000 seats) and its compression. The answers are
// content-addressed (ETag: the body's hash), so a client's copy is
// revalidated with If-None-Match and answered 304 with no body.
//
// Concurrent reads of one event wait for one build. The cache keeps at
// most maxBytes of answers; past it, the least recently read events are
// dropped.
type seatsCache struct {
	maxBytes int64

	mu    sync.Mutex
	slots map[uuid.UUID]*seatsSlot
	bytes int64
}

// seatsSlot is one event's place in the cache; mu makes its build one at
// a time.
type seatsSlot struct {
	mu   sync.Mutex
	ans  *seatsAnswer
	used atomic.Int64 // unix nanoseconds of the last read
}

// seatsAnswer is one built answer of an event's seats.
type seatsAnswer struct {
	key   string // seats version and prices it was built from
	etag  string // strong; the gzip copy's carries "-gzip"
	plain []byte
	gz    []byte
}

func (a *seatsAnswer) size() int64 { return int64(len(a.plain) + len(a.gz)) }

// seatsCacheBytes bounds the answers kept: a 200 000-seat event's is
// ~45 MB (its JSON and gzip), so a few of the largest fit.
const seatsCacheBytes = 256 << 20

func newSeatsCache(maxBytes int64) *seatsCache {
	return &seatsCache{maxBytes: maxBytes, slots: map[uuid.UUID]*seatsSlot{}}
}

// seatsKey is what an answer depends on besides the seats' layout (fixed
// with the event's chart): the seats' version and the prices.
func seatsKey(version int64, prices map[string]store.Category) string {
	keys := make([]string, 0, len(prices))
	for k := range prices {
		keys = append(keys, k)
	}
	// Sorted by hand: the map is tiny (an event's categories).
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	h := fnv.New64a()
	for _, k := range keys {
		c := prices[k]
		_, _ = h.Write([]byte(k + "\x00" + strconv.FormatInt(c.PriceMinor, 10) + "\x00" + c.Currency + "\x00"))
	}
	return strconv.FormatInt(version, 10) + "-" + strconv.FormatUint(h.Sum64(), 16)
}

// get returns the event's answer for key, building it with build when
// the cached one is older.
func (c *seatsCache) get(event uuid.UUID, key string, build func() (any, error)) (*seatsAnswer, error) {
	c.mu.Lock()
	slot := c.slots[event]
	if slot == nil {
		slot = &seatsSlot{}
		c.slots[event] = slot
	}
	c.mu.Unlock()
	slot.used.Store(time.Now().UnixNano())

	slot.mu.Lock()
	defer slot.mu.Unlock()
	if a := slot.ans; a != nil && a.key == key {
		return a, nil
	}
	v, err := build()
	if err != nil {
		return nil, err
	}
	a, err := encodeSeats(key, v)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := slot.ans; old != nil && c.slots[event] == slot {
		c.bytes -= old.size()
	}
	slot.ans = a
	if c.slots[event] == slot {
		c.bytes += a.size()
		c.evict(event)
	}
	return a, nil
}

// evict drops the least recently read answers, other than keep's, until
// the cache is within its bound. Called with mu held.
func (c *seatsCache) evict(keep uuid.UUID) {
	for c.bytes > c.maxBytes {
		var oldest uuid.UUID
		var at int64
		found := false
		for id, s := range c.slots {
			if id == keep {
				continue
			}
			if u := s.used.Load(); !found || u < at {
				oldest, at, found = id, u, true
			}
		}
		if !found {
			return
		}
		if a := c.slots[oldest].ans; a != nil {
			c.bytes -= a.size()
		}
		delete(c.slots, oldest)
	}
}

// encodeSeats builds an answer: the JSON exactly as httpx.WriteJSON
// writes it, its gzip, and their ETags.
func encodeSeats(key string, v any) (*seatsAnswer, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	plain := append(b, '\n')
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(plain); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(plain)
	return &seatsAnswer{key: key, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, plain: plain, gz: gz.Bytes()}, nil
}

// serve answers a: 304 when If-None-Match names it, else the gzip copy to
// a client that takes gzip and the plain one to others. The answer is
// private (it needs a session or key) and revalidated on every use.
func (a *seatsAnswer) serve(w http.ResponseWriter, r *http.Request) {
	gz := acceptsGzip(r.Header.Values("Accept-Encoding"))
	etag, body := a.etag, a.plain
	if gz {
		etag, body = strings.TrimSuffix(a.etag, `"`)+`-gzip"`, a.gz
	}
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "private, no-cache")
	h.Set("Vary", "Accept-Encoding")
	if noneMatch(r.Header.Values("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if gz {
		// Set before the header goes out, so the compressing middleware
		// passes the body through as it is.
		h.Set("Content-Encoding", "gzip")
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// noneMatch reports whether an If-None-Match header names etag (either
// copy's: both are the same seats), by the weak comparison RFC 9110
// prescribes for it.
func noneMatch(values []string, etag string) bool {
	base := strings.TrimSuffix(etag, `"`)
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if t == "*" || t == etag || t == base+`-gzip"` {
				return true
			}
		}
	}
	return false
}

// acceptsGzip reports whether an Accept-Encoding header takes gzip (not
// refused with q=0).
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
				continue
			}
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
