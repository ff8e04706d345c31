package web

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/seatlock"
)

// limiter counts requests per subject per clock minute in Redis (INCR +
// EXPIRE 60 in one pipeline), so the limit holds across processes. While
// Redis errors, or the core's breaker says Redis is down, it counts in
// this process instead: the limit then holds per process, which is weaker
// but never lets a Redis outage disable it.
type limiter struct {
	rdb     redis.UniversalClient
	prefix  string
	redisUp func() bool
	log     *slog.Logger
	now     func() time.Time
	refused *prometheus.CounterVec

	mu         sync.Mutex
	minute     int64
	local      map[string]int
	warnedFrom int64 // minute of the last "falling back" warning
}

func newLimiter(rdb redis.UniversalClient, prefix string, redisUp func() bool, log *slog.Logger, refused *prometheus.CounterVec) *limiter {
	return &limiter{rdb: rdb, prefix: prefix, redisUp: redisUp, log: log, now: time.Now, refused: refused,
		local: map[string]int{}, warnedFrom: -1}
}

// allowHold counts a hold request of a user (per user, per org).
func (l *limiter) allowHold(ctx context.Context, a hold.Actor, limit int) error {
	return l.allow(ctx, "hold", limit, func(minute int64) string {
		return seatlock.RateKey(l.prefix, a.Org, a.User.String(), minute)
	})
}

// allowLogin counts a login or signup attempt from an IP. There is no org
// before a session exists, so the key has its own hash tag.
func (l *limiter) allowLogin(ctx context.Context, ip string, limit int) error {
	return l.allow(ctx, "login", limit, func(minute int64) string {
		return l.prefix + ":{login}:rl:" + ip + ":" + strconv.FormatInt(minute, 10)
	})
}

func (l *limiter) allow(ctx context.Context, name string, limit int, key func(minute int64) string) error {
	now := l.now()
	minute := now.Unix() / 60
	k := key(minute)
	// The process counts every request itself too, so a Redis hiccup in
	// the middle of a minute falls back to a count that includes the
	// requests Redis saw from this process, not to zero.
	local := l.localCount(k, minute)
	n, err := l.redisCount(ctx, k)
	if err != nil {
		l.warnFallback(minute, err)
		n = max(n, local)
	}
	if n <= int64(limit) {
		return nil
	}
	l.refused.WithLabelValues(name).Inc()
	retry := int(60 - now.Unix()%60) // seconds to the next minute, 1..60
	return &limitedError{retryAfter: retry, err: apperr.E(apperr.RateLimited,
		"too many requests; try again in %d seconds", retry)}
}

var errRedisSkipped = errors.New("redis skipped: breaker open")

func (l *limiter) redisCount(ctx context.Context, key string) (int64, error) {
	if !l.redisUp() {
		return 0, errRedisSkipped
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 250*time.Millisecond)
	defer cancel()
	var incr *redis.IntCmd
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		incr = p.Incr(ctx, key)
		p.Expire(ctx, key, time.Minute)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return incr.Val(), nil
}

func (l *limiter) localCount(key string, minute int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if minute != l.minute {
		l.minute = minute
		clear(l.local)
	}
	l.local[key]++
	return int64(l.local[key])
}

func (l *limiter) warnFallback(minute int64, cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.warnedFrom != minute && !errors.Is(cause, errRedisSkipped) {
		l.warnedFrom = minute
		l.log.Warn("rate limit: redis failed, counting in this process", "err", cause)
	}
}

// clientIP is the peer address of the request. Forwarding headers are not
// trusted: anyone could send them to get a fresh login budget.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
