package waitroom

// The admitter: one process at a time lets each line's visitors through,
// at the set rate or the automatic one, never more than the seats left
// justify.

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// OpenRoom is a room that is on, with what its event has left.
type OpenRoom struct {
	Room
	// SeatsLeft caps the admissions that count at once (admitted within
	// the admission's validity): admitting more visitors than there are
	// seats only lets them find the map empty. Negative: no cap.
	SeatsLeft int
}

// Source lists the rooms that are on now, across organizations.
type Source interface {
	OpenRooms(ctx context.Context) ([]OpenRoom, error)
}

// Admitter lets visitors through, one tick at a time. Every process runs
// one; for each event, the one that holds the event's lease (a key under
// the event's hash tag, taken and renewed in the admission script itself)
// admits, so the rate is kept whatever the number of processes and a
// process that lost its lease cannot admit. All its state is in Redis:
// a restarted or new admitter carries on where the last one stopped.
type Admitter struct {
	line  *Line
	src   Source
	auto  *AIMD
	log   *slog.Logger
	owner string
	every time.Duration
	// lastAdjust is when auto was last adjusted (the loop's only state).
	lastAdjust time.Time
}

// AdjustEvery is how often the automatic rate is adjusted: long enough
// for the hold latency of the last admissions to show.
const AdjustEvery = 10 * time.Second

// NewAdmitter returns an admitter of line's rooms that src lists, ticking
// every every (a second is right: the rate is spread over the minute);
// auto sets the rate of rooms with an automatic one.
func NewAdmitter(line *Line, src Source, auto *AIMD, log *slog.Logger, every time.Duration) *Admitter {
	if every <= 0 {
		every = time.Second
	}
	return &Admitter{line: line, src: src, auto: auto, log: log, owner: uuid.NewString(), every: every}
}

// Run admits every tick until ctx ends. A tick that fails (Redis or
// Postgres down) admits nobody: the room fails closed, and the visitors
// keep their places for the next tick that succeeds.
func (a *Admitter) Run(ctx context.Context) {
	t := time.NewTicker(a.every)
	defer t.Stop()
	for {
		if _, err := a.Tick(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("waiting room: admitting nobody this tick", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Tick admits what each open room allows now and returns how many it
// admitted in all.
func (a *Admitter) Tick(ctx context.Context) (int, error) {
	rooms, err := a.src.OpenRooms(ctx)
	if err != nil {
		return 0, err
	}
	if a.auto != nil && time.Since(a.lastAdjust) >= AdjustEvery {
		a.auto.Adjust(ctx)
		a.lastAdjust = time.Now()
	}
	total := 0
	var firstErr error
	for _, r := range rooms {
		rate := float64(r.RatePerMinute)
		if rate <= 0 && a.auto != nil {
			rate = a.auto.Rate()
		}
		n, err := a.admit(ctx, r, rate)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		total += n
	}
	return total, firstErr
}

// admitScript admits one room's next visitors if the caller holds (or
// can take) the room's lease. The allowance is a token bucket on Redis's
// clock: rate/minute accrues since the last tick, capped at burst, and
// what is not used carries over; so two ticks close together admit no
// more than one long one, and a new admitter resumes the bucket. The
// admissions still valid count against the seats left (ARGV[4], -1: no
// cap). Admitted visitors move, head of the line first, to the admitted
// set with the time of their admission.
// Every tick the line's keys are given another keep time (ARGV[8]): the
// keys of a room turned off, no longer ticked, go by themselves.
// KEYS: line, admitted, state, lease. ARGV: owner, lease ms, rate/min,
// seats left, admission ms, burst, opens at ms, keep ms.
// Reply: admitted (-1: another admitter holds the lease).
var admitScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[4])
if cur and cur ~= ARGV[1] then return -1 end
redis.call('SET', KEYS[4], ARGV[1], 'PX', ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(ARGV[3])
redis.call('HSET', KEYS[3], 'rate', ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[5]))
if now < tonumber(ARGV[7]) then
  redis.call('HSET', KEYS[3], 'last', now, 'credit', 0)
  return 0
end
local last = tonumber(redis.call('HGET', KEYS[3], 'last') or now)
local credit = tonumber(redis.call('HGET', KEYS[3], 'credit') or 0)
local el = now - last
if el < 0 then el = 0 end
credit = math.min(credit + rate * el / 60000, tonumber(ARGV[6]))
local n = math.floor(credit)
local seats = tonumber(ARGV[4])
if seats >= 0 then
  local room = seats - redis.call('ZCARD', KEYS[2])
  if room < n then n = math.max(room, 0) end
end
local admitted = 0
if n > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[1], n)
  for i = 1, #popped, 2 do
    redis.call('ZADD', KEYS[2], now, popped[i])
  end
  admitted = #popped / 2
end
credit = credit - admitted
redis.call('HSET', KEYS[3], 'last', now, 'credit', tostring(credit))
redis.call('HINCRBY', KEYS[3], 'admitted', admitted)
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[8]) end
return admitted
`)

// keep is how long a line's keys outlive the last tick of its room (and
// the last join): a room turned off for a day is forgotten.
const keep = 24 * time.Hour

// burst is the most a bucket holds: two seconds of the rate (at least
// one visitor), so a line that was empty a while does not let a crowd
// through at once when it fills.
func burst(rate float64) float64 { return math.Max(1, rate/30) }

func (a *Admitter) admit(ctx context.Context, r OpenRoom, rate float64) (int, error) {
	k := a.line.keys(r.Org, r.Event)
	// The lease outlives three ticks: a live admitter renews it every
	// tick, a dead one's passes to another process within seconds.
	lease := 3 * a.every
	n, err := admitScript.Run(ctx, a.line.rdb, []string{k.line, k.admitted, k.state, k.lease},
		a.owner, lease.Milliseconds(), strconv.FormatFloat(rate, 'f', 3, 64), r.SeatsLeft,
		a.line.admitTTL.Milliseconds(), strconv.FormatFloat(burst(rate), 'f', 3, 64), r.OpensAt.UnixMilli(), keep.Milliseconds()).Int()
	if err != nil {
		return 0, fmt.Errorf("waitroom: admit %v: %w", r.Event, err)
	}
	return max(n, 0), nil
}
