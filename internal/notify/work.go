package notify

import (
	"context"
	"math"
	"time"
)

// Subscriber is what Work needs of a notifier (*Notifier has it).
type Subscriber interface {
	Listen(channel string, fn func(payload string)) (unlisten func())
	OnReady(fn func()) (remove func())
}

// Schedule says when a worker woken by notifications runs its rounds.
type Schedule struct {
	// Cooldown is the least time between the starts of a round and of the
	// round a notification wakes after it: under a stream of
	// notifications a round takes what accumulated meanwhile, instead of
	// rounds running back to back (each a transaction or two).
	Cooldown time.Duration
	// Settle is when, after a notification, one more round runs: the
	// statements that queue work coalesce their announcements (migration
	// 029), so one that left its announcement to another may commit just
	// after that one.
	Settle time.Duration
	// Backstop is the longest time between two rounds: what no
	// notification told of (announcements lost, work that falls due
	// later) waits at most this long.
	Backstop time.Duration
	// Wake, when set, wakes a round as a notification does: for work of
	// the worker's own that ends between its rounds (the webhook worker's
	// probes).
	Wake <-chan struct{}
}

// Idle is what a round returns when it wants no round sooner than the
// schedule gives.
const Idle = time.Duration(math.MaxInt64)

// Work runs round until ctx ends: at once; on every notification on
// channel or receive on s.Wake (no sooner than Cooldown after the
// previous round began) and Settle after it; whenever the notifier (re)connects, as notifications
// may have been missed; and at most Backstop after the previous round
// ended. round returns how soon after it ends it wants the next one (0:
// at once; Idle: when the schedule says).
func Work(ctx context.Context, n Subscriber, channel string, s Schedule, round func(ctx context.Context) (soon time.Duration)) {
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	unlisten := n.Listen(channel, func(string) { poke() })
	defer unlisten()
	unready := n.OnReady(poke)
	defer unready()
	t := time.NewTimer(0)
	defer t.Stop()
	// due is when the timer fires; next is the earliest a woken round may
	// start; settle is the round due after the last notification.
	due := time.Now()
	var next, settle time.Time
	for {
		woken := false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
			woken = true
		case <-s.Wake:
			woken = true
		}
		if woken {
			now := time.Now()
			settle = now.Add(s.Settle)
			if next.After(now) {
				if next.Before(due) {
					due = next
					t.Reset(next.Sub(now))
				}
				continue
			}
		}
		start := time.Now()
		next = start.Add(s.Cooldown)
		if !settle.After(start) {
			settle = time.Time{}
		}
		soon := min(round(ctx), s.Backstop)
		end := time.Now()
		due = end.Add(soon)
		if !settle.IsZero() && settle.Before(due) {
			due = settle
		}
		t.Reset(max(due.Sub(end), 0))
	}
}
