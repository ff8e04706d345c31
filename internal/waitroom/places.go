package waitroom

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Places settings.
const (
	// headEvery is how old a line's head may be when a place is answered
	// from it: a waiting visitor sees an admission at most this much
	// later than through the line's script.
	headEvery = 250 * time.Millisecond
	// placesMax bounds the waiting visitors a process remembers, over
	// every line (about 100 bytes each); past it, newcomers' places are
	// answered by the line's script, as before.
	placesMax = 500_000
	// placesSweep is how often a line's remembered visitors who were
	// admitted since (and did not come back for it) are forgotten.
	placesSweep = time.Minute
)

// Places answers waiting visitors' places, most of them without Redis.
// After the opening a visitor's place only moves as the head of the line
// is admitted, so the first answer of the line's script gives a number
// (its rank plus the admissions so far) and, later, the place is that
// number less the admissions since. Each process reads each line's head
// (admissions so far, waiting, the rate) at most every headEvery, and
// remembers the number of each waiting visitor it answered; one poll of
// a visitor it knows then costs no Redis call. Everything else goes to
// the line's script, which alone decides: a visitor whose number has
// come is admitted there (or not), a line cleared or lost since (another
// epoch) or whose opening moved is asked there again, and with Redis
// down a stale head is not used, so the room fails closed as the script
// does. Join and Place have Line's meaning.
type Places struct {
	line *Line
	now  func() time.Time

	mu    sync.Mutex
	rooms map[uuid.UUID]*roomPlaces // by event
	count int                       // visitors remembered, every room
}

// roomPlaces is what a process knows of one line.
type roomPlaces struct {
	fetch sync.Mutex // one read of the head at a time
	// Guarded by fetch: the last head read, and the last failed read
	// (failedAt, failure), which the polls that waited for it share
	// rather than each waiting for a read of its own in turn.
	head     head
	failedAt time.Time
	failure  error

	numbers map[string]number // guarded by Places.mu
	swept   time.Time         // read under fetch, written under fetch and Places.mu
}

// head is a line's head as read from Redis at `at`.
type head struct {
	at                        time.Time
	epoch                     uint64
	admitted, waiting, perMin int64
	rate                      float64
}

// number is a waiting visitor's place counted from the line's first
// admission, in the line of epoch that opens at opens (ms).
type number struct {
	n, opens int64
	epoch    uint64
}

// NewPlaces returns the places of line's rooms.
func NewPlaces(line *Line) *Places {
	return &Places{line: line, now: time.Now, rooms: map[uuid.UUID]*roomPlaces{}}
}

// Join is Line.Join, answered without Redis for a visitor known waiting.
func (c *Places) Join(ctx context.Context, room Room, visitor string) (Place, error) {
	return c.answer(ctx, room, visitor, true)
}

// Place is Line.Place, answered without Redis for a visitor known
// waiting.
func (c *Places) Place(ctx context.Context, room Room, visitor string) (Place, error) {
	return c.answer(ctx, room, visitor, false)
}

func (c *Places) answer(ctx context.Context, room Room, visitor string, join bool) (Place, error) {
	if p, ok := c.known(ctx, room, visitor); ok {
		return p, nil
	}
	p, err := c.line.place(ctx, room, visitor, join)
	if err != nil {
		return p, err
	}
	c.remember(room, visitor, p)
	return p, nil
}

// known answers the place of a visitor remembered waiting whose number
// has not come, from a head no older than headEvery.
func (c *Places) known(ctx context.Context, room Room, visitor string) (Place, bool) {
	c.mu.Lock()
	r := c.rooms[room.Event]
	var num number
	ok := r != nil
	if ok {
		num, ok = r.numbers[visitor]
	}
	c.mu.Unlock()
	if !ok || num.opens != room.OpensAt.UnixMilli() {
		return Place{}, false
	}
	h, err := c.headOf(ctx, room, r)
	if err != nil || h.epoch != num.epoch {
		return Place{}, false
	}
	ahead := num.n - h.admitted
	if ahead < 0 {
		// Admitted since: the script says so, and gives the admission.
		return Place{}, false
	}
	return Place{State: Waiting, Position: ahead + 1, Ahead: ahead, InLine: h.waiting, AdmittedPerMinute: h.perMin,
		ETA: eta(ahead+1, h.perMin, rateOf(room, h.rate)), OpensAt: room.OpensAt}, true
}

// remember notes the number of a visitor the script answered waiting,
// and forgets one it answered otherwise.
func (c *Places) remember(room Room, visitor string, p Place) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.rooms[room.Event]
	if p.State != Waiting || p.epoch == 0 {
		if r != nil {
			if _, ok := r.numbers[visitor]; ok {
				delete(r.numbers, visitor)
				c.count--
			}
		}
		return
	}
	if r == nil {
		r = &roomPlaces{numbers: map[string]number{}, swept: c.now()}
		c.rooms[room.Event] = r
	}
	if _, ok := r.numbers[visitor]; !ok {
		if c.count >= placesMax {
			return
		}
		c.count++
	}
	r.numbers[visitor] = number{n: p.number, opens: room.OpensAt.UnixMilli(), epoch: p.epoch}
}

// headOf is room's head, read again when older than headEvery. A failed
// read is the caller's error, and that of every caller within headEvery
// after it: no answer comes from an older head.
func (c *Places) headOf(ctx context.Context, room Room, r *roomPlaces) (head, error) {
	r.fetch.Lock()
	defer r.fetch.Unlock()
	now := c.now()
	if now.Sub(r.head.at) < headEvery {
		return r.head, nil
	}
	if now.Sub(r.failedAt) < headEvery {
		return head{}, r.failure
	}
	h, err := c.line.head(ctx, room)
	if err != nil {
		r.failedAt, r.failure = c.now(), err
		return head{}, err
	}
	h.at = now
	r.head = h
	if now.Sub(r.swept) >= placesSweep {
		c.sweep(room.Event, r, h, now)
	}
	return h, nil
}

// sweep forgets r's visitors admitted by head h (they come back through
// the script, if at all), and r itself once nobody is left in it.
func (c *Places) sweep(event uuid.UUID, r *roomPlaces, h head, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r.swept = now
	for v, num := range r.numbers {
		if num.epoch != h.epoch || num.n < h.admitted {
			delete(r.numbers, v)
			c.count--
		}
	}
	if len(r.numbers) == 0 && c.rooms[event] == r {
		delete(c.rooms, event)
	}
}

// headScript reads a line's head: admitted since the line began, its
// epoch, waiting, admitted in the last minute (on Redis's clock) and the
// admitter's rate. Places answers from it, and Line.Stats is made of it.
var headScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local st = redis.call('HMGET', KEYS[3], 'admitted', 'epoch', 'rate')
return {st[1] or '0', st[2] or '0', redis.call('ZCARD', KEYS[1]), redis.call('ZCOUNT', KEYS[2], now - 60000, '+inf'), st[3] or '0'}
`)

func (l *Line) head(ctx context.Context, room Room) (head, error) {
	k := l.keys(room.Org, room.Event)
	res, err := headScript.Run(ctx, l.rdb, []string{k.line, k.admitted, k.state}).Slice()
	if err != nil {
		return head{}, fmt.Errorf("waitroom: head: %w", err)
	}
	if len(res) != 5 {
		return head{}, fmt.Errorf("waitroom: head: unexpected reply %v", res)
	}
	var h head
	h.admitted, _ = strconv.ParseInt(fmt.Sprint(res[0]), 10, 64)
	h.epoch, _ = strconv.ParseUint(fmt.Sprint(res[1]), 10, 64)
	h.waiting, h.perMin = res[2].(int64), res[3].(int64)
	h.rate, _ = strconv.ParseFloat(fmt.Sprint(res[4]), 64)
	return h, nil
}
