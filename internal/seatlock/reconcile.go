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

// Rebuild makes Redis agree with Postgres for one event: locks for every
// active hold and none for other seats, the expiry ZSET, the availability
// bitmap, the counters, and a fence counter above every fence in use.
func (l *Locks) Rebuild(ctx context.Context, org, event uuid.UUID, seats []SeatState, maxFence int64, now time.Time) error {
	k := l.Keys(org, event)
	maxIdx := 0
	for _, s := range seats {
		maxIdx = max(maxIdx, s.Idx)
	}
	bitmap := make([]byte, maxIdx/8+1)
	counts := map[string]int{"available": 0, "held": 0, "sold": 0, "blocked": 0}
	var zs []redis.Z
	var stale []string
	for _, s := range seats {
		counts[s.Status]++
		if s.Status != "available" {
			bitmap[s.Idx/8] |= 0x80 >> (s.Idx % 8) // Redis numbers bits from the most significant
		}
		if s.Lock != nil {
			zs = append(zs, redis.Z{Score: float64(s.Lock.Expires.UnixMilli()), Member: s.ID.String()})
		} else {
			stale = append(stale, k.Seat(s.ID))
		}
	}
	if err := raiseFence.Run(ctx, l.rdb, []string{k.Fence()}, maxFence).Err(); err != nil {
		return err
	}
	_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, k.Holds())
		if len(zs) > 0 {
			p.ZAdd(ctx, k.Holds(), zs...)
		}
		p.Set(ctx, k.Avail(), bitmap, 0)
		p.HSet(ctx, k.Occ(), "available", counts["available"], "held", counts["held"],
			"sold", counts["sold"], "blocked", counts["blocked"])
		for _, s := range seats {
			if s.Lock != nil {
				ttl := s.Lock.Expires.Sub(now) + l.margin
				p.Set(ctx, k.Seat(s.ID), s.Lock.encode(), max(ttl, time.Second))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Dropping locks of free seats is the big part for a large event; do
	// it in slot-local batches outside the transaction.
	for len(stale) > 0 {
		n := min(len(stale), 1000)
		if err := l.rdb.Unlink(ctx, stale[:n]...).Err(); err != nil {
			return err
		}
		stale = stale[n:]
	}
	return nil
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
