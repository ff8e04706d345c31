package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seatd/internal/apperr"
	"seatd/internal/config"
)

// Lockout locks an account (organization + email, whether or not
// it exists) after repeated failed logins: after `failures` failures in a
// row, every further failure locks it for `lockout`, doubling each time
// up to `lockoutMax`. While locked, every login of the account is refused
// with 429 before any password is hashed, from any address: per-IP limits
// alone let a botnet try one password per address.
//
// Attempts from a browser with a valid device cookie of the account
// (DeviceCookies) are counted apart, per device: a stranger's failures
// lock the account's untrusted attempts only, so nobody can lock the
// owner out of the browser they signed in with before, and failures with
// a device cookie lock that cookie only. The counts live in
// Redis, shared by every process (one script call per failure); while
// Redis is down, or when it errs, they are kept in this process, so the
// limit then holds per process. Failures are forgotten failureWindow
// after the last one, and a successful login clears them.
type Lockout struct {
	l          *Limiter
	failures   int
	lockout    time.Duration
	lockoutMax time.Duration
	window     time.Duration

	mu    sync.Mutex
	local map[string]*localAccount
}

type localAccount struct {
	fails int
	last  time.Time
	until time.Time
}

// localAccountsMax bounds the in-process fallback; beyond it, forgotten
// failures are dropped first, then everything (an outage-time flood of
// made-up accounts must not grow memory without bound).
const localAccountsMax = 100_000

// NewLockout returns the lockout of cfg's settings
// (SEATD_LOGIN_ACCOUNT_FAILURES, SEATD_LOGIN_LOCKOUT,
// SEATD_LOGIN_LOCKOUT_MAX), counting in l's Redis.
func NewLockout(l *Limiter, cfg config.Config) *Lockout {
	return newLockout(l, cfg.LoginAccountFailures, cfg.LoginLockout, cfg.LoginLockoutMax)
}

func newLockout(l *Limiter, failures int, lockout, lockoutMax time.Duration) *Lockout {
	return &Lockout{l: l, failures: failures, lockout: lockout, lockoutMax: lockoutMax,
		window: max(time.Hour, 2*lockoutMax), local: map[string]*localAccount{}}
}

// accountKey names an account for the limiter without putting an email
// address in Redis.
func accountKey(org, email string) string {
	h := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(org)) + "\x00" + strings.ToLower(strings.TrimSpace(email))))
	return hex.EncodeToString(h[:16])
}

func (a *Lockout) keys(acct string) (fails, lock string) {
	tag := a.l.prefix + ":{acct:" + acct + "}"
	return tag + ":fails", tag + ":lock"
}

// backoff is the lockout after the n-th failure in a row (n >= failures).
func (a *Lockout) backoff(n int) time.Duration {
	d := a.lockout << min(n-a.failures, 30)
	if d <= 0 || d > a.lockoutMax {
		return a.lockoutMax
	}
	return d
}

// Check refuses a login of a locked account (org's slug and the email
// signed in with, whether or not it exists) with a rate-limit error that
// says when to try again. device is the attempt's device
// (DeviceCookies.Trusted), "" for an untrusted attempt.
func (a *Lockout) Check(ctx context.Context, org, email, device string) error {
	return a.check(ctx, lockSubject(org, email, device))
}

// lockSubject is what an attempt is counted under: the account, or the
// account on one device.
func lockSubject(org, email, device string) string {
	if device == "" {
		return accountKey(org, email)
	}
	return accountKey(org, email) + ":dev:" + device
}

func (a *Lockout) check(ctx context.Context, acct string) error {
	var left time.Duration
	if a.l.redisUp() {
		_, lock := a.keys(acct)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 250*time.Millisecond)
		d, err := a.l.rdb.PTTL(ctx, lock).Result()
		cancel()
		if err == nil && d > 0 {
			left = d
		}
	}
	now := a.l.now()
	a.mu.Lock()
	if x := a.local[acct]; x != nil && x.until.After(now) {
		left = max(left, x.until.Sub(now))
	}
	a.mu.Unlock()
	if left <= 0 {
		return nil
	}
	a.l.refused.WithLabelValues("login_account").Inc()
	retry := int((left + time.Second - 1) / time.Second)
	return &limited{retryAfter: retry, err: apperr.E(apperr.RateLimited,
		"too many failed sign-ins for this account; try again in %d seconds", retry)}
}

// failScript counts a failure and, from the threshold on, sets the lock.
// KEYS: fails, lock. ARGV: threshold, lockout ms, max ms, window ms.
var failScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
local t = tonumber(ARGV[1])
if n >= t then
  local ms = math.min(tonumber(ARGV[2]) * 2 ^ math.min(n - t, 30), tonumber(ARGV[3]))
  redis.call('SET', KEYS[2], n, 'PX', math.floor(ms))
end
return n
`)

// Failed counts a failed login of the account (from device, or
// untrusted).
func (a *Lockout) Failed(ctx context.Context, org, email, device string) {
	a.failed(ctx, lockSubject(org, email, device))
}

func (a *Lockout) failed(ctx context.Context, acct string) {
	if a.l.redisUp() {
		fails, lock := a.keys(acct)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 250*time.Millisecond)
		err := failScript.Run(ctx, a.l.rdb, []string{fails, lock}, a.failures,
			a.lockout.Milliseconds(), a.lockoutMax.Milliseconds(), a.window.Milliseconds()).Err()
		cancel()
		if err == nil {
			return
		}
		a.l.log.Warn("login lockout: redis failed, counting in this process", "err", err)
	}
	now := a.l.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	x := a.local[acct]
	if x == nil || now.Sub(x.last) > a.window {
		if len(a.local) >= localAccountsMax {
			a.sweep(now)
		}
		x = &localAccount{}
		a.local[acct] = x
	}
	x.fails++
	x.last = now
	if x.fails >= a.failures {
		x.until = now.Add(a.backoff(x.fails))
	}
}

// sweep drops forgotten failures, and everything if that is not enough.
// Called with mu held.
func (a *Lockout) sweep(now time.Time) {
	for k, x := range a.local {
		if now.Sub(x.last) > a.window {
			delete(a.local, k)
		}
	}
	if len(a.local) >= localAccountsMax {
		clear(a.local)
	}
}

// Succeeded clears the failures counted where the login was (the
// device's, or the account's untrusted ones).
func (a *Lockout) Succeeded(ctx context.Context, org, email, device string) {
	a.succeeded(ctx, lockSubject(org, email, device))
}

func (a *Lockout) succeeded(ctx context.Context, acct string) {
	a.mu.Lock()
	delete(a.local, acct)
	a.mu.Unlock()
	if !a.l.redisUp() {
		return
	}
	fails, _ := a.keys(acct)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 250*time.Millisecond)
	defer cancel()
	if err := a.l.rdb.Del(ctx, fails).Err(); err != nil {
		a.l.log.Warn("login lockout: clear failures", "err", err)
	}
}
