package hold

import (
	"context"
	"errors"
	"log/slog"

	"github.com/sony/gobreaker/v2"

	"seatd/internal/seatlock"
	"seatd/internal/telemetry"
)

// redisTier is the Redis half of the registry as one process sees it: the
// locks behind a circuit breaker. Redis is usable while the breaker is
// closed; an event's locks are trusted only once the follower synced them
// (eventState.synced).
type redisTier struct {
	locks   *seatlock.Locks
	breaker *gobreaker.CircuitBreaker[any]
}

func newRedisTier(locks *seatlock.Locks, opt Options, log *slog.Logger, m *telemetry.Metrics, onOpen func()) *redisTier {
	r := &redisTier{locks: locks}
	r.breaker = gobreaker.NewCircuitBreaker[any](gobreaker.Settings{
		Name:        "redis",
		MaxRequests: 1,
		Timeout:     opt.BreakerOpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= uint32(max(opt.BreakerFailures, 1)) }, // #nosec G115 -- small positive config value
		IsSuccessful: func(err error) bool {
			// A caller giving up is not Redis failing, and neither is an
			// answer Redis gave.
			return err == nil || errors.Is(err, context.Canceled) ||
				errors.Is(err, seatlock.ErrCap) || errors.Is(err, seatlock.ErrNotSynced) || errors.Is(err, seatlock.ErrLate)
		},
		OnStateChange: func(_ string, from, to gobreaker.State) {
			m.BreakerTransitions.WithLabelValues(to.String()).Inc()
			if to == gobreaker.StateOpen {
				m.BreakerOpen.Set(1)
				onOpen()
			}
			if to == gobreaker.StateClosed {
				m.BreakerOpen.Set(0)
			}
			log.Warn("redis breaker", "from", from.String(), "to", to.String())
		},
	})
	return r
}

// usable reports whether Redis calls are being made at all.
func (r *redisTier) usable() bool { return r.breaker.State() == gobreaker.StateClosed }

// call runs a Redis call through the breaker.
func call[T any](r *redisTier, f func() (T, error)) (T, error) {
	var zero T
	v, err := r.breaker.Execute(func() (any, error) { return f() })
	if err != nil {
		return zero, err
	}
	return v.(T), nil
}
