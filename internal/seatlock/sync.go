package seatlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// SeatState is one seat as Postgres has it at some snapshot: its version,
// the highest fence ever applied to it, and the lock of its active hold
// when held.
type SeatState struct {
	ID      uuid.UUID
	Version int64
	Fence   int64
	Lock    *Lock
}

// syncScript makes seats agree with Postgres, by one rule per seat: a lock
// whose fence is above the seat's fence in Postgres was taken after that
// state, and while it is young enough (ARGV[3], the cutoff) its write may
// be committing right now, so it is left alone; otherwise the lock becomes the active hold's
// lock, or goes when the seat has no active hold. Postgres refuses any
// write whose fence is not above the seat's, so a lock at or below it can
// never turn into a hold. Each seat's state is applied only if its
// version is above the last one applied (KEYS[5]), so a sync that reaches
// Redis late — read from Postgres earlier, or held up by the network
// while its process was cut off — never undoes a newer one.
//
// ARGV[1] is 'inc' for an incremental sync, 'full' for a batch of a full
// sync and 'mark' for its last batch, which marks the event as synced. An
// incremental sync returns {-1} when the mark is gone (Redis flushed or
// restarted) and changes nothing, because a replica missing its history
// cannot be brought current by the latest changes alone. Otherwise it
// returns 0, then the index and value of each lock it left in place that
// the state does not name (in flight, or under a newer state): the caller
// checks those once they are too old to commit, since a lock whose writer
// died is named by no state to come.
var syncScript = redis.NewScript(`
if ARGV[1] == 'inc' and redis.call('EXISTS', KEYS[4]) == 0 then return {-1} end
local floor = tonumber(ARGV[2])
if tonumber(redis.call('GET', KEYS[3]) or '0') < floor then redis.call('SET', KEYS[3], floor) end
local cutoff = tonumber(ARGV[3])
local function fence(v) return tonumber(string.match(v, '^[^|]*|[^|]*|([^|]*)|')) or 0 end
local function acquired(v) return tonumber(string.match(v, '|([^|]*)$')) or 0 end
local function owner(v) return string.match(v, '^[^|]*|([^|]*)|') end
local function hold(v) return string.match(v, '^([^|]*|[^|]*|[^|]*|[^|]*)|') end
local n = #KEYS - 5
local out = {0}
for i = 1, n do
  local b = 3 + (i - 1) * 5
  local sid, ver, f, lock, px = ARGV[b + 1], tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), ARGV[b + 4], ARGV[b + 5]
  local v = redis.call('GET', KEYS[5 + i])
  if tonumber(redis.call('HGET', KEYS[5], sid) or '0') >= ver then
    -- a newer state of this seat was applied already
    if v and (lock == '' or hold(v) ~= hold(lock)) then
      out[#out + 1] = i
      out[#out + 1] = v
    end
  elseif v and fence(v) > f and acquired(v) >= cutoff then
    -- taken after this state: its owner or a later change decides, or
    -- the caller's check once it is too old (the state is not recorded as
    -- applied: if the lock's write fails, the same state must still be
    -- able to come back)
    out[#out + 1] = i
    out[#out + 1] = v
  elseif lock ~= '' then
    if not v or hold(v) ~= hold(lock) or ARGV[1] ~= 'inc' then
      -- (a lock already right was listed by whoever wrote it; a full sync
      -- lists every lock again all the same)
      if v and hold(v) ~= hold(lock) then redis.call('ZREM', KEYS[2], owner(v) .. '|' .. sid) end
      if not v or hold(v) ~= hold(lock) then
        redis.call('SET', KEYS[5 + i], lock, 'PX', px)
      end
      redis.call('ZADD', KEYS[1], string.match(lock, '^[^|]*|[^|]*|[^|]*|([^|]*)|'), sid)
      redis.call('ZADD', KEYS[2], 0, owner(lock) .. '|' .. sid)
    end
    redis.call('HSET', KEYS[5], sid, ver)
  else
    if v then
      redis.call('DEL', KEYS[5 + i])
      redis.call('ZREM', KEYS[2], owner(v) .. '|' .. sid)
    end
    redis.call('ZREM', KEYS[1], sid)
    redis.call('HSET', KEYS[5], sid, ver)
  end
end
if ARGV[1] == 'mark' then redis.call('SET', KEYS[4], '1') end
return out
`)

// syncBatch bounds the seats of one script call, so a large sync never
// blocks Redis for long.
const syncBatch = 500

// Kept is a lock Sync left in place that Postgres's state of its seat does
// not name.
type Kept struct {
	Seat uuid.UUID
	Lock Lock
}

// Sync makes the seats' locks agree with Postgres (see syncScript) and
// lifts the fence counter to at least maxFence. A lock newer than
// Postgres's state is kept while younger than inFlight. It returns the
// locks it kept that the states do not name. full marks the event
// synced; without it, Sync returns ErrNotSynced when Redis lost the event
// (the caller then runs a full sync).
func (l *Locks) Sync(ctx context.Context, org, event uuid.UUID, seats []SeatState, maxFence int64, now time.Time,
	inFlight time.Duration, full bool) ([]Kept, error) {
	k := l.Keys(org, event)
	var kept []Kept
	for start := 0; start == 0 || start < len(seats); start += syncBatch {
		part := seats[start:min(start+syncBatch, len(seats))]
		keys := make([]string, 0, len(part)+5)
		keys = append(keys, k.Holds(), k.Holders(), k.Fence(), k.Synced(), k.Versions())
		args := make([]any, 0, 3+5*len(part))
		mode := "inc"
		if full {
			mode = "full"
			if start+syncBatch >= len(seats) {
				// The mark goes with the last batch, once every seat is in line.
				mode = "mark"
			}
		}
		args = append(args, mode, maxFence, now.Add(-inFlight).UnixMilli())
		for _, s := range part {
			keys = append(keys, k.Seat(s.ID))
			lock, px := "", int64(0)
			if s.Lock != nil {
				lock = s.Lock.encode()
				px = max(s.Lock.Expires.Sub(now)+l.margin, time.Second).Milliseconds()
			}
			args = append(args, s.ID.String(), s.Version, s.Fence, lock, px)
		}
		res, err := syncScript.Run(ctx, l.rdb, keys, args...).Slice()
		if err != nil {
			return kept, err
		}
		if len(res) == 0 {
			return kept, errors.New("seatlock: unexpected sync reply")
		}
		if n, _ := res[0].(int64); n < 0 {
			return kept, ErrNotSynced
		}
		for j := 1; j+1 < len(res); j += 2 {
			i, _ := res[j].(int64)
			v, _ := res[j+1].(string)
			lk, err := ParseLock(v)
			if err != nil || i < 1 || int(i) > len(part) {
				return kept, fmt.Errorf("seatlock: sync reply: lock %q of seat %d: %v", v, i, err)
			}
			kept = append(kept, Kept{Seat: part[i-1].ID, Lock: lk})
		}
	}
	return kept, nil
}
