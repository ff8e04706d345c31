// Package seatlock is the Redis tier of the hold registry: per-seat locks
// taken and dropped by Lua scripts, the expiry ZSET, the availability
// bitmap, the fencing counter and the live counters of an event. All keys
// of one event share a hash tag, {org:event}, so every script touches one
// Redis Cluster slot, and every key names the organization.
package seatlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Keys builds the key names of one event.
type Keys struct {
	prefix     string
	org, event uuid.UUID
}

// EventKeys returns the key builder of an event under prefix.
func EventKeys(prefix string, org, event uuid.UUID) Keys {
	return Keys{prefix: prefix, org: org, event: event}
}

func (k Keys) base() string {
	return k.prefix + ":{" + k.org.String() + ":" + k.event.String() + "}:"
}

// Seat is the lock key of one seat.
func (k Keys) Seat(seat uuid.UUID) string { return k.base() + "seat:" + seat.String() }

// Holds is the ZSET of held seats scored by expiry (ms).
func (k Keys) Holds() string { return k.base() + "holds" }

// Avail is the bitmap with bit idx set when the seat is not available.
func (k Keys) Avail() string { return k.base() + "avail" }

// Fence is the fencing-token counter.
func (k Keys) Fence() string { return k.base() + "fence" }

// Occ is the HASH of live counters by status.
func (k Keys) Occ() string { return k.base() + "occ" }

// Live is the sharded pub/sub channel of the event.
func (k Keys) Live() string { return k.base() + "live" }

// RateKey is a per-user, per-minute counter key of an organization.
func RateKey(prefix string, org uuid.UUID, subject string, minute int64) string {
	return prefix + ":{" + org.String() + "}:rl:" + subject + ":" + strconv.FormatInt(minute, 10)
}

// Lock is the content of a seat's lock key.
type Lock struct {
	HoldID     uuid.UUID
	UserID     uuid.UUID
	Fence      int64
	Expires    time.Time // the hold's held_until
	AcquiredAt time.Time
}

func (l Lock) encode() string {
	return l.HoldID.String() + "|" + l.UserID.String() + "|" + strconv.FormatInt(l.Fence, 10) + "|" +
		strconv.FormatInt(l.Expires.UnixMilli(), 10) + "|" + strconv.FormatInt(l.AcquiredAt.UnixMilli(), 10)
}

// ParseLock decodes a lock value.
func ParseLock(v string) (Lock, error) {
	p := strings.Split(v, "|")
	if len(p) != 5 {
		return Lock{}, fmt.Errorf("seatlock: malformed lock %q", v)
	}
	var l Lock
	var err error
	if l.HoldID, err = uuid.Parse(p[0]); err != nil {
		return Lock{}, fmt.Errorf("seatlock: hold id: %w", err)
	}
	if l.UserID, err = uuid.Parse(p[1]); err != nil {
		return Lock{}, fmt.Errorf("seatlock: user id: %w", err)
	}
	if l.Fence, err = strconv.ParseInt(p[2], 10, 64); err != nil {
		return Lock{}, fmt.Errorf("seatlock: fence: %w", err)
	}
	exp, err := strconv.ParseInt(p[3], 10, 64)
	if err != nil {
		return Lock{}, fmt.Errorf("seatlock: expiry: %w", err)
	}
	acq, err := strconv.ParseInt(p[4], 10, 64)
	if err != nil {
		return Lock{}, fmt.Errorf("seatlock: acquired: %w", err)
	}
	l.Expires, l.AcquiredAt = time.UnixMilli(exp).UTC(), time.UnixMilli(acq).UTC()
	return l, nil
}

// Seat names one seat for a script: its id and bitmap index.
type Seat struct {
	ID  uuid.UUID
	Idx int
}

// Locks runs the lock scripts against a Redis (single or cluster).
type Locks struct {
	rdb    redis.UniversalClient
	prefix string
	margin time.Duration
}

// New returns Locks on rdb. margin is how long a lock outlives its hold's
// held_until: Redis expiry is a safety net for a dead reaper, not the
// mechanism, so it must never fire before Postgres expires the hold.
func New(rdb redis.UniversalClient, prefix string, margin time.Duration) *Locks {
	return &Locks{rdb: rdb, prefix: prefix, margin: margin}
}

// Keys returns the key builder of an event.
func (l *Locks) Keys(org, event uuid.UUID) Keys { return EventKeys(l.prefix, org, event) }

// acquire takes all seats or none. A seat already locked by the same user
// counts as taken by them (idempotent); by another user, as a conflict.
// Fences are drawn from the event counter, lifted above floor when the
// counter was lost (a flushed or restarted Redis).
var acquireScript = redis.NewScript(`
local n = #KEYS - 4
local user = ARGV[1]
local taken = {}
local existing = {}
for i = 1, n do
  local v = redis.call('GET', KEYS[4 + i])
  if v then
    local uid = string.match(v, '^[^|]*|([^|]*)|')
    if uid == user then existing[i] = v else taken[#taken + 1] = i end
  end
end
if #taken > 0 then
  local out = {}
  for j = 1, #taken do out[j] = redis.call('GET', KEYS[4 + taken[j]]) end
  return {0, taken, out}
end
local floor = tonumber(ARGV[5])
local out = {}
for i = 1, n do
  if existing[i] then
    out[i] = existing[i]
  else
    local f = redis.call('INCR', KEYS[3])
    if f <= floor then
      f = floor + 1
      redis.call('SET', KEYS[3], f)
    end
    local base = 5 + (i - 1) * 3
    local v = ARGV[base + 1] .. '|' .. user .. '|' .. f .. '|' .. ARGV[2] .. '|' .. ARGV[4]
    redis.call('SET', KEYS[4 + i], v, 'PX', ARGV[3])
    if redis.call('ZADD', KEYS[1], ARGV[2], ARGV[base + 2]) == 1 then
      redis.call('HINCRBY', KEYS[4], 'available', -1)
      redis.call('HINCRBY', KEYS[4], 'held', 1)
    end
    redis.call('SETBIT', KEYS[2], ARGV[base + 3], 1)
    out[i] = v
  end
end
return {1, {}, out}
`)

// AcquireResult is the outcome of Acquire.
type AcquireResult struct {
	OK bool
	// Locks holds one lock per requested seat when OK (a lock whose HoldID
	// differs from the proposed one was already the user's), or the
	// conflicting locks when not OK.
	Locks []Lock
	// Taken lists the indexes (into the request) of seats locked by others.
	Taken []int
}

// Acquire locks every seat for user with the proposed hold ids, or none.
func (l *Locks) Acquire(ctx context.Context, org, event, user uuid.UUID, seats []Seat, holdIDs []uuid.UUID,
	now, heldUntil time.Time, floor int64) (AcquireResult, error) {
	k := l.Keys(org, event)
	keys := make([]string, 0, len(seats)+4)
	keys = append(keys, k.Holds(), k.Avail(), k.Fence(), k.Occ())
	args := make([]any, 0, 5+3*len(seats))
	ttl := heldUntil.Sub(now) + l.margin
	args = append(args, user.String(), heldUntil.UnixMilli(), ttl.Milliseconds(), now.UnixMilli(), floor)
	for i, s := range seats {
		keys = append(keys, k.Seat(s.ID))
		args = append(args, holdIDs[i].String(), s.ID.String(), s.Idx)
	}
	res, err := acquireScript.Run(ctx, l.rdb, keys, args...).Slice()
	if err != nil {
		return AcquireResult{}, err
	}
	if len(res) != 3 {
		return AcquireResult{}, errors.New("seatlock: unexpected acquire reply")
	}
	ok, _ := res[0].(int64)
	out := AcquireResult{OK: ok == 1}
	if idx, _ := res[1].([]any); len(idx) > 0 {
		for _, x := range idx {
			i, _ := x.(int64)
			out.Taken = append(out.Taken, int(i)-1)
		}
	}
	vals, _ := res[2].([]any)
	for _, v := range vals {
		s, _ := v.(string)
		if s == "" { // a conflicting lock that expired between the two GETs
			out.Locks = append(out.Locks, Lock{})
			continue
		}
		lk, err := ParseLock(s)
		if err != nil {
			return AcquireResult{}, err
		}
		out.Locks = append(out.Locks, lk)
	}
	return out, nil
}

// release drops the locks whose value still names the given hold; a lock
// taken over by a newer hold is left alone (compare-and-delete).
var releaseScript = redis.NewScript(`
local n = #KEYS - 3
local done = 0
for i = 1, n do
  local base = (i - 1) * 4
  local hid = ARGV[base + 1]
  local v = redis.call('GET', KEYS[3 + i])
  if v and string.sub(v, 1, #hid + 1) == hid .. '|' then
    redis.call('DEL', KEYS[3 + i])
    done = done + 1
  end
  if not v or string.sub(v, 1, #hid + 1) == hid .. '|' then
    local to = 'sold'
    if ARGV[base + 4] == '1' then
      to = 'available'
      redis.call('SETBIT', KEYS[2], ARGV[base + 3], 0)
    end
    if redis.call('ZREM', KEYS[1], ARGV[base + 2]) == 1 then
      redis.call('HINCRBY', KEYS[3], 'held', -1)
      redis.call('HINCRBY', KEYS[3], to, 1)
    end
  end
end
return done
`)

// Released names a lock to drop: the seat and the hold that must own it.
type Released struct {
	Seat   Seat
	HoldID uuid.UUID
	// Free clears the seat's availability bit (released or expired); a
	// sold seat keeps it.
	Free bool
}

// Release compare-and-deletes locks of one event.
func (l *Locks) Release(ctx context.Context, org, event uuid.UUID, rs []Released) (int, error) {
	if len(rs) == 0 {
		return 0, nil
	}
	k := l.Keys(org, event)
	keys := make([]string, 0, len(rs)+3)
	keys = append(keys, k.Holds(), k.Avail(), k.Occ())
	args := make([]any, 0, 4*len(rs))
	for _, r := range rs {
		keys = append(keys, k.Seat(r.Seat.ID))
		free := "0"
		if r.Free {
			free = "1"
		}
		args = append(args, r.HoldID.String(), r.Seat.ID.String(), r.Seat.Idx, free)
	}
	n, err := releaseScript.Run(ctx, l.rdb, keys, args...).Int()
	return n, err
}

// extend rewrites the expiry of locks still owned by the given holds.
var extendScript = redis.NewScript(`
local n = #KEYS - 1
local done = 0
for i = 1, n do
  local base = (i - 1) * 4
  local hid = ARGV[base + 1]
  local v = redis.call('GET', KEYS[1 + i])
  if v and string.sub(v, 1, #hid + 1) == hid .. '|' then
    local h, u, f, e, a = string.match(v, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
    redis.call('SET', KEYS[1 + i], h .. '|' .. u .. '|' .. f .. '|' .. ARGV[base + 3] .. '|' .. a, 'PX', ARGV[base + 4])
    redis.call('ZADD', KEYS[1], ARGV[base + 3], ARGV[base + 2])
    done = done + 1
  end
end
return done
`)

// Extended names a lock whose hold got a new held_until.
type Extended struct {
	SeatID    uuid.UUID
	HoldID    uuid.UUID
	HeldUntil time.Time
}

// Extend moves the expiry of locks still owned by the given holds.
func (l *Locks) Extend(ctx context.Context, org, event uuid.UUID, now time.Time, es []Extended) (int, error) {
	if len(es) == 0 {
		return 0, nil
	}
	k := l.Keys(org, event)
	keys := make([]string, 0, len(es)+1)
	keys = append(keys, k.Holds())
	args := make([]any, 0, 4*len(es))
	for _, e := range es {
		keys = append(keys, k.Seat(e.SeatID))
		args = append(args, e.HoldID.String(), e.SeatID.String(), e.HeldUntil.UnixMilli(),
			(e.HeldUntil.Sub(now) + l.margin).Milliseconds())
	}
	return extendScript.Run(ctx, l.rdb, keys, args...).Int()
}

// Get returns the lock of a seat, or ok=false when there is none.
func (l *Locks) Get(ctx context.Context, org, event, seat uuid.UUID) (Lock, bool, error) {
	v, err := l.rdb.Get(ctx, l.Keys(org, event).Seat(seat)).Result()
	if errors.Is(err, redis.Nil) {
		return Lock{}, false, nil
	}
	if err != nil {
		return Lock{}, false, err
	}
	lk, err := ParseLock(v)
	return lk, err == nil, err
}

// HeldCount is the number of seats in the event's expiry ZSET.
func (l *Locks) HeldCount(ctx context.Context, org, event uuid.UUID) (int64, error) {
	return l.rdb.ZCard(ctx, l.Keys(org, event).Holds()).Result()
}

// HeldSeats lists the seat ids in the event's expiry ZSET.
func (l *Locks) HeldSeats(ctx context.Context, org, event uuid.UUID) ([]string, error) {
	return l.rdb.ZRange(ctx, l.Keys(org, event).Holds(), 0, -1).Result()
}

// Ping checks that Redis answers.
func (l *Locks) Ping(ctx context.Context) error { return l.rdb.Ping(ctx).Err() }
