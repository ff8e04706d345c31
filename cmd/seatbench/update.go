package main

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"
)

// A waiting visitor sees its place move only when its page asks again:
// the page polls (static/js/queue.js) at the interval the last answer
// gave. This file measures the time from a change of place, as Redis
// records it, until each waiting visitor's page shows it.

// maxPollGap is the longest a waiting page waits between two answers:
// the gate's longest interval (30 s, web/queue) spread by +20 % by the
// server and +10 % by the page, and a second for the answer. A change is
// measured only when every visitor's next answer after it falls in the
// polling window.
const maxPollGap = 41 * time.Second

// answer is one poll's answer as the page reads it: when it was read,
// the interval the page waited before asking (since its last answer),
// and the place it shows.
type answer struct {
	done     time.Time
	gap      time.Duration
	position int64 // 0 when not waiting
	admitted bool
}

// tick is an admission step: when Redis let its batch in (ms, Redis's
// clock) and how many were let in since the opening, its batch included.
type tick struct {
	atMS     float64
	admitted int64
}

// updateDelays measures, for every tick and every visitor still waiting
// after it, the time from the tick until the visitor's first answer
// showing its new place or better (the line only moves forward: a place
// at or ahead of rank+1−admitted, or the admission). rank is each
// visitor's 0-based place at the opening (-1: not in line), answers its
// answers in order. It returns those times, the page's poll interval
// before each of those answers, how far past that interval each came,
// and the pairs no answer showed before the window ended.
func updateDelays(answers [][]answer, rank []int64, ticks []tick) (delay, gap, late []float64, unseen int) {
	for v, as := range answers {
		if rank[v] < 0 {
			continue
		}
		j := 0
		for _, t := range ticks {
			place := rank[v] + 1 - t.admitted
			if place < 1 {
				break // admitted at this tick: no longer waiting
			}
			at := time.UnixMicro(int64(t.atMS * 1000))
			for j < len(as) && !(as[j].done.After(at) && (as[j].admitted || (as[j].position > 0 && as[j].position <= place))) {
				j++
			}
			if j == len(as) {
				unseen++
				continue
			}
			d := as[j].done.Sub(at)
			delay = append(delay, ms(d))
			gap = append(gap, ms(as[j].gap))
			late = append(late, ms(d-as[j].gap))
		}
	}
	return delay, gap, late, unseen
}

// lineKey is the Redis key of one of an event's line's structures
// (internal/waitroom: line, admitted, ...).
func lineKey(org, ev, what string) string { return "seatd:{" + org + ":" + ev + "}:wr:" + what }

// ranks reads the event's line (members are user ids) and gives each
// visitor's 0-based place in it, -1 for those not in line.
func lineRanks(ctx context.Context, redisURL, org, ev string, visitors []*session) ([]int64, error) {
	rdb, err := redisOf(redisURL)
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	ids, err := rdb.ZRange(ctx, lineKey(org, ev, "line"), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("read the line: %w", err)
	}
	at := make(map[string]int64, len(ids))
	for i, id := range ids {
		at[id] = int64(i)
	}
	out := make([]int64, len(visitors))
	for i, v := range visitors {
		r, ok := at[v.userID]
		if !ok {
			r = -1
		}
		out[i] = r
	}
	return out, nil
}

// admissionTicks reads the admission steps from the opening on (every
// admission's time in the admitted set) and gives those in [from, to)
// with the admissions up to each since the opening.
func admissionTicks(ctx context.Context, rdb *redis.Client, org, ev string, opens, from, to time.Time) ([]tick, error) {
	zs, err := rdb.ZRangeByScoreWithScores(ctx, lineKey(org, ev, "admitted"), &redis.ZRangeBy{
		Min: fmt.Sprint(opens.UnixMilli()), Max: "(" + fmt.Sprint(to.UnixMilli())}).Result()
	if err != nil {
		return nil, fmt.Errorf("read admissions: %w", err)
	}
	sort.SliceStable(zs, func(i, j int) bool { return zs[i].Score < zs[j].Score })
	var out []tick
	var n int64
	for i, z := range zs {
		n++
		if i+1 < len(zs) && zs[i+1].Score == z.Score {
			continue
		}
		if z.Score >= float64(from.UnixMilli()) {
			out = append(out, tick{atMS: z.Score, admitted: n})
		}
	}
	return out, nil
}

// measureUpdates fills rm's update rows from the visitors' answers and
// the line in Redis (ranks read before the opening).
func (rm *Room) measureUpdates(ctx context.Context, redisURL, org, ev string, answers [][]answer, rank []int64, opens, from, to time.Time) error {
	rdb, err := redisOf(redisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	ticks, err := admissionTicks(ctx, rdb, org, ev, opens, from, to)
	if err != nil {
		return err
	}
	if len(ticks) == 0 {
		return fmt.Errorf("no admission step between %s and %s after the opening", from.Sub(opens).Round(time.Second), to.Sub(opens).Round(time.Second))
	}
	delay, gap, late, unseen := updateDelays(answers, rank, ticks)
	rm.UpdateTicks, rm.UpdateUnseen = len(ticks), unseen
	rm.Update, rm.UpdateGap, rm.UpdateLate = latencyOf(delay), latencyOf(gap), latencyOf(late)
	return nil
}

// redisOf is a client of the bench's Redis.
func redisOf(redisURL string) (*redis.Client, error) {
	u, err := url.Parse(redisURL)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(&redis.Options{Addr: u.Host}), nil
}
