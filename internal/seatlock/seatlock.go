// Package seatlock is the Redis tier of the hold registry: per-seat locks
// taken and dropped by Lua scripts, the expiry ZSET, each buyer's locks
// (for the hold cap) and the fencing counter of an event. All keys of one
// event share a hash tag, {org:event}, so every script touches one Redis
// Cluster slot, and every key names the organization. Redis is a replica
// of Postgres, kept in line by Sync from Postgres's change feed; it is
// trusted to refuse fast, never to grant.
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

	"seatd/internal/coalesce"
)

// Keys builds the key names of one event.
type Keys struct {
	base string // "prefix:{org:event}:", built once: a hold names several keys
}

// EventKeys returns the key builder of an event under prefix.
func EventKeys(prefix string, org, event uuid.UUID) Keys {
	return Keys{base: prefix + ":{" + org.String() + ":" + event.String() + "}:"}
}

// Seat is the lock key of one seat.
func (k Keys) Seat(seat uuid.UUID) string { return k.base + "seat:" + seat.String() }

// Holds is the ZSET of held seats scored by expiry (ms).
func (k Keys) Holds() string { return k.base + "holds" }

// Holders is the ZSET (all scores 0, ordered by member) of "user|seat"
// for every lock: a buyer's locks are one range of it, counted for the cap.
func (k Keys) Holders() string { return k.base + "holders" }

// Versions is the HASH of the Postgres seat version each seat's lock was
// last synced to (see Sync).
func (k Keys) Versions() string { return k.base + "versions" }

// Synced exists while Redis holds the event's state as synced from
// Postgres; a flushed or restarted Redis lacks it, and the fast path
// stays off for the event until a full sync writes it again.
func (k Keys) Synced() string { return k.base + "synced" }

// Fence is the fencing-token counter.
func (k Keys) Fence() string { return k.base + "fence" }

// Live is the sharded pub/sub channel of the event.
func (k Keys) Live() string { return k.base + "live" }

// Published is the sharded pub/sub channel on which a process announces
// an event it put on sale, so every process's warmer loads it at once.
func (l *Locks) Published() string { return l.prefix + ":{events}:published" }

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

// Locks runs the lock scripts against a Redis (single or cluster).
type Locks struct {
	rdb    redis.Cmdable
	prefix string
	margin time.Duration
	// acquires, when set, sends concurrent acquire scripts in one
	// pipeline (see Coalesce).
	acquires *coalesce.Batcher[scriptCall, scriptReply]
}

// scriptCall is one run of the acquire script; scriptReply its reply.
type scriptCall struct {
	keys []string
	args []any
}

type scriptReply struct {
	res []any
	err error
}

// Coalesce sends concurrent acquires together: while slots pipelines are
// in flight, acquires queue, and the next pipeline takes up to size of
// them. A round trip (two syscalls here and two in Redis) per acquire was
// the biggest single cost of a hold on this process. Each acquire is its
// own script run, atomic on its own; only the round trip is shared.
// size < 2 leaves it off.
func (l *Locks) Coalesce(slots, size int) {
	if size < 2 || slots < 1 {
		l.acquires = nil
		return
	}
	l.acquires = coalesce.New(slots, size, l.runAcquires)
}

// runAcquires sends a batch of acquire scripts in one pipeline and
// answers each with its own reply (a batch of one costs one round trip,
// as a lone script run does). The pipeline does not inherit the sender's
// cancellation: it carries other buyers' acquires.
func (l *Locks) runAcquires(ctx context.Context, batch []*coalesce.Call[scriptCall, scriptReply]) {
	ctx = context.WithoutCancel(ctx)
	cmds := make([]*redis.Cmd, len(batch))
	// Each command's own error is read below; the pipeline's is the first
	// of them.
	_, _ = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range batch {
			cmds[i] = acquireScript.EvalSha(ctx, p, c.Req.keys, c.Req.args...)
		}
		return nil
	})
	for i, c := range batch {
		res, err := cmds[i].Slice()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			// Redis lost its scripts (restarted or flushed): this run
			// loads the script again.
			res, err = acquireScript.Run(ctx, l.rdb, c.Req.keys, c.Req.args...).Slice()
		}
		c.Answer(scriptReply{res, err})
	}
}

// New returns Locks on rdb. margin is how long a lock outlives its hold's
// held_until: Redis expiry is a safety net for a dead reaper, not the
// mechanism, so it must never fire before Postgres expires the hold.
func New(rdb redis.Cmdable, prefix string, margin time.Duration) *Locks {
	return &Locks{rdb: rdb, prefix: prefix, margin: margin}
}

// Keys returns the key builder of an event.
func (l *Locks) Keys(org, event uuid.UUID) Keys { return EventKeys(l.prefix, org, event) }

// acquire takes all seats or none. A seat already locked by the same user
// counts as taken by them (idempotent); by another user, as a conflict.
// A buyer whose locks plus the new ones would exceed the cap is refused
// in the same step, so a burst of requests cannot each see "0 held".
// Fences are drawn from the event counter, lifted above floor when the
// counter was lost. An event Redis has not been synced for (or lost, to a
// flush or restart) is refused with 3: its locks cannot be trusted. A
// request that reaches Redis later than ARGV[8] ms after it was made (held
// up while its process was cut off) is refused with 4: its caller gave up
// long ago, and the locks would belong to nobody.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - tonumber(ARGV[4]) > tonumber(ARGV[8]) then return {4, {}, {}} end
if redis.call('EXISTS', KEYS[4]) == 0 then return {3, {}, {}} end
local n = #KEYS - 4
local user = ARGV[1]
local function owner(v) return string.match(v, '^[^|]*|([^|]*)|') end
local taken = {}
local existing = {}
local fresh = 0
for i = 1, n do
  local v = redis.call('GET', KEYS[4 + i])
  if v then
    if owner(v) == user then existing[i] = v else taken[#taken + 1] = i end
  else
    fresh = fresh + 1
  end
end
if #taken > 0 then
  local out = {}
  for j = 1, #taken do out[j] = redis.call('GET', KEYS[4 + taken[j]]) end
  return {0, taken, out}
end
local cap = tonumber(ARGV[6])
if cap > 0 and fresh > 0 then
  local lo, hi = '[' .. user .. '|', '[' .. user .. '|~'
  if redis.call('ZLEXCOUNT', KEYS[2], lo, hi) + fresh > cap then
    -- Over the cap by the count: check the buyer's entries one by one (an
    -- entry whose lock expired or changed hands is dropped, not counted)
    -- before refusing. Under the cap, the count alone answers.
    local held = 0
    for _, m in ipairs(redis.call('ZRANGEBYLEX', KEYS[2], lo, hi)) do
      local v = redis.call('GET', ARGV[7] .. string.sub(m, #user + 2))
      if v and owner(v) == user then held = held + 1 else redis.call('ZREM', KEYS[2], m) end
    end
    if held + fresh > cap then return {2, {}, {}} end
  end
end
local out = {}
if fresh == 0 then
  for i = 1, n do out[i] = existing[i] end
  return {1, {}, out}
end
-- One counter step and one ZADD per key for all fresh seats: each call
-- out of a script costs about as much as the work it does.
local floor = tonumber(ARGV[5])
local f = redis.call('INCRBY', KEYS[3], fresh) - fresh
if f < floor then
  f = floor
  redis.call('SET', KEYS[3], floor + fresh)
end
local expiry, holders = {}, {}
for i = 1, n do
  if existing[i] then
    out[i] = existing[i]
  else
    f = f + 1
    local base = 8 + (i - 1) * 2
    local v = ARGV[base + 1] .. '|' .. user .. '|' .. f .. '|' .. ARGV[2] .. '|' .. ARGV[4]
    redis.call('SET', KEYS[4 + i], v, 'PX', ARGV[3])
    expiry[#expiry + 1] = ARGV[2]
    expiry[#expiry + 1] = ARGV[base + 2]
    holders[#holders + 1] = 0
    holders[#holders + 1] = user .. '|' .. ARGV[base + 2]
    out[i] = v
  end
end
-- In pieces: unpack is bounded by Lua's stack.
for _, z in ipairs({{KEYS[1], expiry}, {KEYS[2], holders}}) do
  for i = 1, #z[2], 1000 do redis.call('ZADD', z[1], unpack(z[2], i, math.min(i + 999, #z[2]))) end
end
return {1, {}, out}
`)

// Acquire outcomes besides success.
var (
	// ErrCap is a buyer whose locks would exceed the cap.
	ErrCap = errors.New("seatlock: buyer at the hold cap")
	// ErrNotSynced is an event Redis holds no synced state of (never
	// synced, or flushed since): its locks say nothing.
	ErrNotSynced = errors.New("seatlock: event not synced")
	// ErrLate is a request that reached Redis too long after it was made.
	ErrLate = errors.New("seatlock: request reached redis too late")
)

// AcquireRequest asks for locks on seats of one event.
type AcquireRequest struct {
	User    uuid.UUID
	Seats   []uuid.UUID
	HoldIDs []uuid.UUID // proposed, one per seat
	// Now is when the request was made; HeldUntil the holds' deadline.
	Now, HeldUntil time.Time
	// Floor is the lowest fence Postgres may still accept.
	Floor int64
	// Cap (0: none) bounds the user's locks in the event.
	Cap int
	// MaxDelay is how late after Now the request may still reach Redis.
	MaxDelay time.Duration
}

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

// Acquire locks every seat of r for its user with the proposed hold ids,
// or none.
func (l *Locks) Acquire(ctx context.Context, org, event uuid.UUID, r AcquireRequest) (AcquireResult, error) {
	k := l.Keys(org, event)
	keys := make([]string, 0, len(r.Seats)+4)
	keys = append(keys, k.Holds(), k.Holders(), k.Fence(), k.Synced())
	args := make([]any, 0, 8+2*len(r.Seats))
	ttl := r.HeldUntil.Sub(r.Now) + l.margin
	args = append(args, r.User.String(), r.HeldUntil.UnixMilli(), ttl.Milliseconds(), r.Now.UnixMilli(), r.Floor, r.Cap,
		k.base+"seat:", r.MaxDelay.Milliseconds())
	for i, s := range r.Seats {
		keys = append(keys, k.Seat(s))
		args = append(args, r.HoldIDs[i].String(), s.String())
	}
	var res []any
	var err error
	if l.acquires != nil {
		var r scriptReply
		if r, err = l.acquires.Do(ctx, scriptCall{keys, args}); err == nil {
			res, err = r.res, r.err
		}
	} else {
		res, err = acquireScript.Run(ctx, l.rdb, keys, args...).Slice()
	}
	if err != nil {
		return AcquireResult{}, err
	}
	if len(res) != 3 {
		return AcquireResult{}, errors.New("seatlock: unexpected acquire reply")
	}
	switch code, _ := res[0].(int64); code {
	case 2:
		return AcquireResult{}, ErrCap
	case 3:
		return AcquireResult{}, ErrNotSynced
	case 4:
		return AcquireResult{}, ErrLate
	case 1:
		return AcquireResult{OK: true, Locks: parseLocks(res[2])}, nil
	}
	out := AcquireResult{Locks: parseLocks(res[2])}
	if idx, _ := res[1].([]any); len(idx) > 0 {
		for _, x := range idx {
			i, _ := x.(int64)
			out.Taken = append(out.Taken, int(i)-1)
		}
	}
	return out, nil
}

// parseLocks decodes a script's list of lock values; a value that is
// missing or unreadable (a conflicting lock that expired between the two
// GETs) becomes the zero Lock.
func parseLocks(v any) []Lock {
	vals, _ := v.([]any)
	out := make([]Lock, len(vals))
	for i, v := range vals {
		s, _ := v.(string)
		out[i], _ = ParseLock(s)
	}
	return out
}

// release drops the locks whose value still names the given hold; a lock
// taken over by a newer hold is left alone (compare-and-delete). A drop
// that comes with the seat's version after the change records it (see
// Sync), so a sync read before the change cannot bring the lock back.
var releaseScript = redis.NewScript(`
local n = #KEYS - 3
local done = 0
for i = 1, n do
  local hid, sid, ver = ARGV[(i - 1) * 3 + 1], ARGV[(i - 1) * 3 + 2], tonumber(ARGV[(i - 1) * 3 + 3])
  local v = redis.call('GET', KEYS[3 + i])
  if v and string.sub(v, 1, #hid + 1) == hid .. '|' then
    redis.call('DEL', KEYS[3 + i])
    redis.call('ZREM', KEYS[2], string.match(v, '^[^|]*|([^|]*)|') .. '|' .. sid)
    done = done + 1
  end
  if not v or string.sub(v, 1, #hid + 1) == hid .. '|' then
    redis.call('ZREM', KEYS[1], sid)
  end
  if ver > 0 and ver > tonumber(redis.call('HGET', KEYS[3], sid) or '0') then
    redis.call('HSET', KEYS[3], sid, ver)
  end
end
return done
`)

// Released names a lock to drop: the seat and the hold that must own it,
// and the seat's version once the hold ended (0 when no change was made,
// as for a write that failed).
type Released struct {
	Seat    uuid.UUID
	HoldID  uuid.UUID
	Version int64
}

// Release compare-and-deletes locks of one event.
func (l *Locks) Release(ctx context.Context, org, event uuid.UUID, rs []Released) (int, error) {
	if len(rs) == 0 {
		return 0, nil
	}
	k := l.Keys(org, event)
	keys := make([]string, 0, len(rs)+3)
	keys = append(keys, k.Holds(), k.Holders(), k.Versions())
	args := make([]any, 0, 3*len(rs))
	for _, r := range rs {
		keys = append(keys, k.Seat(r.Seat))
		args = append(args, r.HoldID.String(), r.Seat.String(), r.Version)
	}
	return releaseScript.Run(ctx, l.rdb, keys, args...).Int()
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

// HeldSeats lists the seat ids in the event's expiry ZSET.
func (l *Locks) HeldSeats(ctx context.Context, org, event uuid.UUID) ([]string, error) {
	return l.rdb.ZRange(ctx, l.Keys(org, event).Holds(), 0, -1).Result()
}

// Forget deletes every key of an event (a deleted one): its locks, its
// sets and counters, and its sync mark.
func (l *Locks) Forget(ctx context.Context, org, event uuid.UUID) error {
	k := l.Keys(org, event)
	seats, err := l.rdb.ZRange(ctx, k.Holds(), 0, -1).Result()
	if err != nil {
		return err
	}
	keys := []string{k.Holds(), k.Holders(), k.Versions(), k.Synced(), k.Fence()}
	for _, m := range seats {
		if id, err := uuid.Parse(m); err == nil {
			keys = append(keys, k.Seat(id))
		}
	}
	return l.rdb.Del(ctx, keys...).Err()
}

// Ping checks that Redis answers.
func (l *Locks) Ping(ctx context.Context) error { return l.rdb.Ping(ctx).Err() }
