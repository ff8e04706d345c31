// Package ratelimit counts requests against the configured limits, per
// client, user or API key, per clock minute and shared by every process
// through Redis (Limiter), and locks accounts after repeated failed
// sign-ins (lockout.go). A refusal is a rate_limited error that says when
// to try again (429 with Retry-After).
package ratelimit

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/seatlock"
	"seatd/internal/telemetry"
)

// Limiter counts requests per subject per clock minute, in this process
// first and in Redis (INCRBY + EXPIRE 60, one pipeline for every key
// counted since the last flush) at most every flushEvery, so the limit
// holds across processes without a Redis round trip per request. A
// process decides with its own exact count plus the other processes'
// counts as of its last flush: across processes the limit may be passed
// by what they admit within flushEvery. While Redis errors, or the core's
// breaker says Redis is down, counts stay in this process: the limit then
// holds per process, which is weaker but never lets a Redis outage
// disable it.
type Limiter struct {
	rdb     redis.Cmdable
	prefix  string
	redisUp func() bool
	log     *slog.Logger
	now     func() time.Time
	refused *prometheus.CounterVec

	// trusted are the proxies whose X-Forwarded-For is believed.
	trusted []netip.Prefix
	// The limits, per minute.
	holdRate, loginRate, upgradeRate, keyRate int
	// The expensive reads', per account or key and per address prefix.
	readRate, readPrefixRate int
	// Sign-ups and new sessions, per network.
	signupRate, sessionRate int

	mu         sync.Mutex
	minute     int64
	pending    map[string]int64 // counted here, not yet added in Redis
	known      map[string]int64 // the Redis count as of our last flush
	lastFlush  time.Time
	flushing   bool
	warnedFrom int64 // minute of the last "falling back" warning
}

// flushEvery is how often a process adds its counts in Redis.
const flushEvery = 100 * time.Millisecond

// New returns the limiter of cfg's limits (SEATD_*_RATE_PER_MINUTE) and
// trusted proxies. It counts in rdb under cfg's key prefix while redisUp
// says Redis is up (the hold core's breaker), and counts its refusals in
// seatd_http_rate_limited_total on reg.
func New(rdb redis.Cmdable, cfg config.Config, redisUp func() bool, log *slog.Logger, reg prometheus.Registerer) *Limiter {
	refused := telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "seatd_http_rate_limited_total", Help: "Requests refused by a rate limit, by limit."},
		[]string{"limit"}))
	l := newLimiter(rdb, cfg.KeyPrefix, redisUp, log, refused)
	l.trusted = cfg.TrustedProxies
	l.holdRate, l.loginRate, l.upgradeRate, l.keyRate =
		cfg.HoldRatePerMinute, cfg.LoginRatePerMinute, cfg.UpgradeRatePerMinute, cfg.APIKeyRatePerMinute
	l.readRate, l.readPrefixRate = cfg.ReadRatePerMinute, cfg.ReadPrefixRatePerMinute
	l.signupRate, l.sessionRate = cfg.SignupRatePerMinute, cfg.NewSessionRatePerMinute
	return l
}

func newLimiter(rdb redis.Cmdable, prefix string, redisUp func() bool, log *slog.Logger, refused *prometheus.CounterVec) *Limiter {
	return &Limiter{rdb: rdb, prefix: prefix, redisUp: redisUp, log: log, now: time.Now, refused: refused,
		pending: map[string]int64{}, known: map[string]int64{}, warnedFrom: -1}
}

// SetClock replaces the clock the limiter and its lockout count minutes
// by; tests set one to keep their counts within one minute. Call it
// before the limiter counts anything.
func (l *Limiter) SetClock(now func() time.Time) { l.now = now }

// Hold counts a hold request of a user (per user, per org).
func (l *Limiter) Hold(ctx context.Context, org, user uuid.UUID) error {
	return l.allow(ctx, "hold", l.holdRate, func(minute int64) string {
		return seatlock.RateKey(l.prefix, org, user.String(), minute)
	})
}

// Login counts a login or signup attempt from the request's client (see
// Subject). There is no org before a session exists, so the key has its
// own hash tag.
func (l *Limiter) Login(r *http.Request) error {
	subject := l.Subject(r)
	return l.allow(r.Context(), "login", l.loginRate, func(minute int64) string {
		return l.prefix + ":{login}:rl:" + subject + ":" + strconv.FormatInt(minute, 10)
	})
}

// Signup counts a sign-up from the request's client network (see
// Prefix): a limit of its own, apart from Login's, as a sign-up makes an
// account (and a mail) where a sign-in makes nothing, and per network,
// since a script has a whole /64 (or a /24 of a cloud) to take addresses
// from.
func (l *Limiter) Signup(r *http.Request) error {
	prefix := l.Prefix(r)
	return l.allow(r.Context(), "signup", l.signupRate, func(minute int64) string {
		return l.prefix + ":{signup}:rl:" + prefix + ":" + strconv.FormatInt(minute, 10)
	})
}

// NewSession counts a session about to begin (a successful sign-in) from
// the request's client network (see Prefix): a burst of sessions of many
// accounts from one network is refused, whatever places or sockets each
// session would take.
func (l *Limiter) NewSession(r *http.Request) error {
	prefix := l.Prefix(r)
	return l.allow(r.Context(), "new_session", l.sessionRate, func(minute int64) string {
		return l.prefix + ":{session}:rl:" + prefix + ":" + strconv.FormatInt(minute, 10)
	})
}

// Upgrade counts a live socket upgrade from the request's client (see
// Subject).
func (l *Limiter) Upgrade(r *http.Request) error {
	subject := l.Subject(r)
	return l.allow(r.Context(), "upgrade", l.upgradeRate, func(minute int64) string {
		return l.prefix + ":{upgrade}:rl:" + subject + ":" + strconv.FormatInt(minute, 10)
	})
}

// Read counts a read that answers a whole event (every seat: the seat
// list, the map), once against the reader (who: an account or an API
// key, whatever session it reads from) and once against the address
// prefix it comes from (see Prefix), so that neither many sessions of
// one account nor many accounts on one network read without bound. The
// prefix's limit is the higher: people share networks.
func (l *Limiter) Read(r *http.Request, who string) error {
	err := l.allow(r.Context(), "read", l.readRate, func(minute int64) string {
		return l.prefix + ":{read}:rl:" + who + ":" + strconv.FormatInt(minute, 10)
	})
	if err != nil {
		return err
	}
	prefix := l.Prefix(r)
	return l.allow(r.Context(), "read_prefix", l.readPrefixRate, func(minute int64) string {
		return l.prefix + ":{read}:rl:net:" + prefix + ":" + strconv.FormatInt(minute, 10)
	})
}

// Prefix is the network the request's client is counted under by limits
// on a whole neighbourhood of addresses: its IPv4 /24 or IPv6 /64.
func (l *Limiter) Prefix(r *http.Request) string {
	return networkSubject(clientIP(r, l.trusted))
}

// networkSubject is an address's /24 (IPv4) or /64 (IPv6).
func networkSubject(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "unknown"
	case a.Is4():
		return netip.PrefixFrom(a, 24).Masked().String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}

// APIKey counts a request made with an API key (per key).
func (l *Limiter) APIKey(ctx context.Context, org, key uuid.UUID) error {
	return l.allow(ctx, "api_key", l.keyRate, func(minute int64) string {
		return seatlock.RateKey(l.prefix, org, "key:"+key.String(), minute)
	})
}

func (l *Limiter) allow(ctx context.Context, name string, limit int, key func(minute int64) string) error {
	now := l.now()
	minute := now.Unix() / 60
	k := key(minute)
	l.mu.Lock()
	if minute != l.minute {
		l.minute = minute
		clear(l.pending)
		clear(l.known)
	}
	l.pending[k]++
	n := l.known[k] + l.pending[k]
	flush := !l.flushing && now.Sub(l.lastFlush) >= flushEvery
	if flush {
		l.flushing, l.lastFlush = true, now
	}
	l.mu.Unlock()
	if flush {
		l.flush(ctx, minute)
		l.mu.Lock()
		n = l.known[k] + l.pending[k]
		l.mu.Unlock()
	}
	if n <= int64(limit) {
		return nil
	}
	l.refused.WithLabelValues(name).Inc()
	retry := int(60 - now.Unix()%60) // seconds to the next minute, 1..60
	return &limited{retryAfter: retry, err: apperr.E(apperr.RateLimited,
		"too many requests; try again in %d seconds", retry)}
}

// flush adds this process's pending counts in Redis in one pipeline and
// learns the totals. On failure the counts stay pending (this process
// keeps limiting on its own) and are retried at the next flush.
func (l *Limiter) flush(ctx context.Context, minute int64) {
	l.mu.Lock()
	batch := make(map[string]int64, len(l.pending))
	for k, n := range l.pending {
		batch[k] = n
	}
	l.mu.Unlock()
	done := func(totals map[string]int64) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.flushing = false
		if l.minute != minute {
			return // a new minute began meanwhile; these counts are moot
		}
		for k, total := range totals {
			// Redis now has our flushed counts; what this process admitted
			// since the flush began is still pending on top of them.
			l.known[k] = total
			if l.pending[k] -= batch[k]; l.pending[k] <= 0 {
				delete(l.pending, k)
			}
		}
	}
	if !l.redisUp() || len(batch) == 0 {
		done(nil)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 250*time.Millisecond)
	defer cancel()
	cmds := make(map[string]*redis.IntCmd, len(batch))
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, n := range batch {
			cmds[k] = p.IncrBy(ctx, k, n)
			p.Expire(ctx, k, time.Minute)
		}
		return nil
	})
	if err != nil {
		l.mu.Lock()
		if l.warnedFrom != minute {
			l.warnedFrom = minute
			l.log.Warn("rate limit: redis failed, counting in this process", "err", err)
		}
		l.mu.Unlock()
		done(nil)
		return
	}
	totals := make(map[string]int64, len(cmds))
	for k, c := range cmds {
		totals[k] = c.Val()
	}
	done(totals)
}

// clientIP is the address of the client that sent the request: the peer,
// unless the peer is one of trusted (a proxy of ours), in which case
// X-Forwarded-For is read from the right, each trusted proxy having
// appended the address it got the request from, and the right-most
// address that is not a trusted proxy is the client. Addresses left of it
// were written by the client and prove nothing. With no trusted proxies
// the header is ignored: anyone could send it to get a fresh login
// budget.
func clientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		a, _ := netip.ParseAddr(r.RemoteAddr)
		return a.Unmap()
	}
	client := ap.Addr().Unmap()
	if !inPrefixes(client, trusted) {
		return client
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHop(strings.TrimSpace(hops[i]))
		if !ok {
			// A trusted proxy passed on garbage: believe nothing further
			// left; the last hop it vouched for stands.
			return client
		}
		client = a
		if !inPrefixes(a, trusted) {
			return a
		}
	}
	return client // every hop is ours: the left-most is the client
}

// parseHop reads one X-Forwarded-For entry: an address, possibly with a
// port (some proxies add one).
func parseHop(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// rateSubject is the key an address is counted under: an IPv4 address as
// is, an IPv6 address by its /64, since one subscriber usually gets a
// whole /64 and could otherwise take a fresh address per request.
func rateSubject(a netip.Addr) string {
	if !a.IsValid() {
		return "unknown"
	}
	if a.Is6() {
		return netip.PrefixFrom(a, 64).Masked().String()
	}
	return a.String()
}

// ClientIP is the address of the request's client: the peer, or the
// address a trusted proxy says it got the request from (see clientIP).
func (l *Limiter) ClientIP(r *http.Request) netip.Addr { return clientIP(r, l.trusted) }

// Mail counts a request that mails someone (a verification link sent
// again, a password reset) against mailRate per minute per subject (an
// account, or an organization's address), so that nobody can make seatd
// flood an inbox. The count is the same whether or not the address has
// an account.
func (l *Limiter) Mail(ctx context.Context, org, subject string) error {
	return l.allow(ctx, "mail", mailRate, func(minute int64) string {
		return l.prefix + ":{mail}:rl:" + org + ":" + subject + ":" + strconv.FormatInt(minute, 10)
	})
}

// mailRate is how many mails a minute one subject may cause.
const mailRate = 3

// Subject is the key the request's client is counted under: its address
// (see clientIP), by /64 for IPv6 (see rateSubject).
func (l *Limiter) Subject(r *http.Request) string {
	return rateSubject(clientIP(r, l.trusted))
}

// limited is a refusal by a limit: 429 rate_limited, with the seconds to
// wait in Retry-After.
type limited struct {
	err        *apperr.Error
	retryAfter int // seconds
}

func (e *limited) Error() string { return e.err.Error() }
func (e *limited) Unwrap() error { return e.err }

// RetryAfter is how many seconds to wait before trying again.
func (e *limited) RetryAfter() int { return e.retryAfter }
