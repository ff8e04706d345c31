package seatlock

import (
	"context"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// SeatState is one seat as Postgres has it, for a rebuild.
type SeatState struct {
	Seat
	Status string // available | held | sold | blocked
	Lock   *Lock  // the active hold's lock when held
}

// raiseFence lifts the fence counter to at least ARGV[1], never lowers it.
var raiseFence = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if cur < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return 1
`)

// syncScript makes a batch of seats agree with Postgres. A seat Postgres
// holds gets its lock written, unless Redis already has a lock with a
// higher fence: that one was taken after Postgres was read (the seat was
// released and held again meanwhile) and overwriting it would drop a hold
// that may be committing right now. Any other seat loses its lock unless
// the lock is younger than the cutoff, because such a lock may belong to a
// hold whose transaction is still in flight and may yet commit.
var syncScript = redis.NewScript(`
local cutoff = tonumber(ARGV[1])
local n = #KEYS - 2
local function fence(v) return tonumber(string.match(v, '^[^|]*|[^|]*|([^|]*)|')) or 0 end
for i = 1, n do
  local base = 1 + (i - 1) * 5
  local sid, idx, status, lock, px = ARGV[base + 1], ARGV[base + 2], ARGV[base + 3], ARGV[base + 4], ARGV[base + 5]
  if lock ~= '' then
    local cur = redis.call('GET', KEYS[2 + i])
    if cur and fence(cur) > fence(lock) then lock = cur else redis.call('SET', KEYS[2 + i], lock, 'PX', px) end
    local exp = string.match(lock, '^[^|]*|[^|]*|[^|]*|([^|]*)|')
    redis.call('ZADD', KEYS[1], exp, sid)
    redis.call('SETBIT', KEYS[2], idx, 1)
  else
    local v = redis.call('GET', KEYS[2 + i])
    local acq = v and tonumber(string.match(v, '|([^|]*)$')) or 0
    if v and acq >= cutoff then
      redis.call('SETBIT', KEYS[2], idx, 1)
    else
      if v then redis.call('DEL', KEYS[2 + i]) end
      redis.call('ZREM', KEYS[1], sid)
      if status == 'available' then redis.call('SETBIT', KEYS[2], idx, 0) else redis.call('SETBIT', KEYS[2], idx, 1) end
    end
  end
end
return n
`)

// Rebuild makes Redis agree with Postgres for one event: a lock for every
// active hold and none for other seats (except locks younger than
// inFlight, whose transactions may still commit), the expiry ZSET, the
// availability bitmap, the counters, and a fence counter above every fence
// in use. It works seat by seat rather than deleting keys wholesale, so
// holds made concurrently through Redis are not lost.
func (l *Locks) Rebuild(ctx context.Context, org, event uuid.UUID, seats []SeatState, maxFence int64, now time.Time, inFlight time.Duration) error {
	k := l.Keys(org, event)
	if err := raiseFence.Run(ctx, l.rdb, []string{k.Fence()}, maxFence).Err(); err != nil {
		return err
	}
	counts := map[string]int{"available": 0, "held": 0, "sold": 0, "blocked": 0}
	cutoff := now.Add(-inFlight).UnixMilli()
	const batch = 400
	for start := 0; start < len(seats); start += batch {
		part := seats[start:min(start+batch, len(seats))]
		keys := make([]string, 0, len(part)+2)
		keys = append(keys, k.Holds(), k.Avail())
		args := make([]any, 0, 1+5*len(part))
		args = append(args, cutoff)
		for _, s := range part {
			counts[s.Status]++
			keys = append(keys, k.Seat(s.ID))
			lock, px := "", int64(0)
			if s.Lock != nil {
				lock = s.Lock.encode()
				px = max(s.Lock.Expires.Sub(now)+l.margin, time.Second).Milliseconds()
			}
			args = append(args, s.ID.String(), s.Idx, s.Status, lock, px)
		}
		if err := syncScript.Run(ctx, l.rdb, keys, args...).Err(); err != nil {
			return err
		}
	}
	return l.rdb.HSet(ctx, k.Occ(), "available", counts["available"], "held", counts["held"],
		"sold", counts["sold"], "blocked", counts["blocked"]).Err()
}

// Restore puts back the lock of a hold Postgres says is active, when Redis
// lost it (flushed, restarted). SET NX: never overwrite a live lock.
func (l *Locks) Restore(ctx context.Context, org, event uuid.UUID, seat Seat, lk Lock, now time.Time) error {
	k := l.Keys(org, event)
	ttl := max(lk.Expires.Sub(now)+l.margin, time.Second)
	_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SetNX(ctx, k.Seat(seat.ID), lk.encode(), ttl)
		p.ZAdd(ctx, k.Holds(), redis.Z{Score: float64(lk.Expires.UnixMilli()), Member: seat.ID.String()})
		p.SetBit(ctx, k.Avail(), int64(seat.Idx), 1)
		return nil
	})
	return err
}

// SetBlocked records a block (or unblock) of an available seat: its bit and
// the live counters.
func (l *Locks) SetBlocked(ctx context.Context, org, event uuid.UUID, idx int, blocked bool) error {
	k := l.Keys(org, event)
	bit, from, to := 1, "available", "blocked"
	if !blocked {
		bit, from, to = 0, "blocked", "available"
	}
	_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SetBit(ctx, k.Avail(), int64(idx), bit)
		p.HIncrBy(ctx, k.Occ(), from, -1)
		p.HIncrBy(ctx, k.Occ(), to, 1)
		return nil
	})
	return err
}

// Counts reads the live counters of an event.
func (l *Locks) Counts(ctx context.Context, org, event uuid.UUID) (map[string]int64, error) {
	m, err := l.rdb.HGetAll(ctx, l.Keys(org, event).Occ()).Result()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for k, v := range m {
		n, _ := strconv.ParseInt(v, 10, 64)
		out[k] = n
	}
	return out, nil
}

// Client exposes the Redis client for pipelines that mix lock keys with
// other commands.
func (l *Locks) Client() redis.UniversalClient { return l.rdb }
