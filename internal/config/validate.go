package config

// The checks of a loaded configuration: each bad or missing setting is
// one error, all reported together.

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

func (c Config) validate() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch c.Env {
	case "development", "test", "production":
	default:
		bad("SEATD_ENV: %q must be development, test or production", c.Env)
	}
	if c.DatabaseURL == "" {
		bad("DATABASE_URL: required (postgres://user@host:port/db)")
	} else if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		bad("DATABASE_URL: must be a postgres:// URL")
	}
	if c.RedisURL == "" {
		bad("REDIS_URL: required (redis://host:port/db)")
	}
	if c.KeyPrefix == "" || strings.ContainsAny(c.KeyPrefix, "{}: ") {
		bad("SEATD_KEY_PREFIX: %q must be non-empty without braces, colons or spaces", c.KeyPrefix)
	}
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			bad("%s: must be positive, got %s", name, d)
		}
	}
	positive("SEATD_HOLD_TTL", c.HoldTTL)
	positive("SEATD_HOLD_EXTENSION", c.HoldExtension)
	positive("SEATD_LOCK_MARGIN", c.LockMargin)
	positive("SEATD_REAPER_INTERVAL", c.ReaperInterval)
	positive("SEATD_FEED_INTERVAL", c.FeedInterval)
	positive("SEATD_WAITLIST_OFFER_TTL", c.WaitlistOfferTTL)
	positive("SEATD_QUEUE_HOLD_P99", c.QueueHoldTarget)
	if c.QueueAdmission < time.Minute {
		bad("SEATD_QUEUE_ADMISSION: must be at least 1m, got %s", c.QueueAdmission)
	}
	if c.QueueSecret != "" && len(c.QueueSecret) < 32 {
		bad("SEATD_QUEUE_SECRET: must be at least 32 characters (openssl rand -base64 32), got %d", len(c.QueueSecret))
	}
	positive("SEATD_WAITLIST_INTERVAL", c.WaitlistInterval)
	positive("SEATD_CACHE_IDLE", c.CacheIdle)
	positive("SEATD_REDIS_DIAL_TIMEOUT", c.RedisDialTimeout)
	positive("SEATD_REDIS_TIMEOUT", c.RedisTimeout)
	positive("SEATD_BREAKER_OPEN_FOR", c.BreakerOpenFor)
	positive("SEATD_PG_LOCK_TIMEOUT", c.PGLockTimeout)
	positive("SEATD_PG_STATEMENT_TIMEOUT", c.PGStatementTimeout)
	positive("SEATD_SESSION_LIFETIME", c.SessionLifetime)
	positive("SEATD_SESSION_IDLE_TIMEOUT", c.SessionIdleTimeout)
	positive("SEATD_SNAPSHOT_INTERVAL", c.SnapshotInterval)
	positive("SEATD_SHUTDOWN_TIMEOUT", c.ShutdownTimeout)
	atLeast := func(name string, n, min int) {
		if n < min {
			bad("%s: must be at least %d, got %d", name, min, n)
		}
	}
	atLeast("SEATD_MAX_EXTENSIONS", c.MaxExtensions, 0)
	atLeast("SEATD_WARM_EVENTS", c.WarmEvents, 0)
	atLeast("SEATD_WARM_SEATS", c.WarmSeats, 0)
	positive("SEATD_WARM_INTERVAL", c.WarmInterval)
	atLeast("SEATD_MAX_HOLDS_PER_BUYER", c.MaxHoldsPerBuyer, 1)
	atLeast("SEATD_MAX_SEATS_PER_REQUEST", c.MaxSeatsPerRequest, 1)
	atLeast("SEATD_REAPER_BATCH", c.ReaperBatch, 1)
	atLeast("SEATD_REDIS_MAX_RETRIES", c.RedisMaxRetries, 0)
	atLeast("SEATD_BREAKER_FAILURES", c.BreakerFailures, 1)
	atLeast("SEATD_PG_MAX_CONNS", c.PGMaxConns, 4)
	atLeast("SEATD_HOLD_BATCH_MAX", c.HoldBatchMax, 1)
	atLeast("SEATD_HOLD_BATCH_SLOTS", c.HoldBatchSlots, 1)
	atLeast("SEATD_HOLD_RATE_PER_MINUTE", c.HoldRatePerMinute, 1)
	atLeast("SEATD_LOGIN_RATE_PER_MINUTE", c.LoginRatePerMinute, 1)
	atLeast("SEATD_LOGIN_ACCOUNT_FAILURES", c.LoginAccountFailures, 1)
	positive("SEATD_LOGIN_LOCKOUT", c.LoginLockout)
	if c.LoginLockoutMax < c.LoginLockout {
		bad("SEATD_LOGIN_LOCKOUT_MAX: %s must be at least SEATD_LOGIN_LOCKOUT (%s)", c.LoginLockoutMax, c.LoginLockout)
	}
	atLeast("SEATD_MAX_PASSWORD_HASHES", c.MaxPasswordHashes, 0)
	atLeast("SEATD_MAX_SOCKETS", c.MaxSockets, 1)
	atLeast("SEATD_MAX_SOCKETS_PER_SESSION", c.MaxSocketsPerSession, 1)
	atLeast("SEATD_MAX_SESSIONS_PER_USER", c.MaxSessionsPerUser, 1)
	atLeast("SEATD_UPGRADE_RATE_PER_MINUTE", c.UpgradeRatePerMinute, 1)
	atLeast("SEATD_READ_RATE_PER_MINUTE", c.ReadRatePerMinute, 1)
	atLeast("SEATD_READ_PREFIX_RATE_PER_MINUTE", c.ReadPrefixRatePerMinute, 1)
	atLeast("SEATD_MAX_SOCKETS_PER_USER", c.MaxSocketsPerUser, 1)
	atLeast("SEATD_MAX_SOCKETS_PER_NETWORK", c.MaxSocketsPerNetwork, 1)
	positive("SEATD_LIVE_TICK", c.LiveTick)
	atLeast("SEATD_SIGNUP_RATE_PER_MINUTE", c.SignupRatePerMinute, 1)
	atLeast("SEATD_NEW_SESSION_RATE_PER_MINUTE", c.NewSessionRatePerMinute, 1)
	positive("SEATD_SESSION_REMEMBER_FOR", c.SessionRememberFor)
	positive("SEATD_REGISTRY_COOLDOWN", c.RegistryCheckCooldown)
	atLeast("SEATD_CHART_UPLOADS", c.ChartUploads, 1)
	atLeast("SEATD_QUOTA_CHARTS", c.QuotaCharts, 0)
	atLeast("SEATD_QUOTA_EVENTS", c.QuotaEvents, 0)
	atLeast("SEATD_QUOTA_API_KEYS", c.QuotaAPIKeys, 0)
	atLeast("SEATD_QUOTA_WEBHOOKS", c.QuotaWebhooks, 0)
	atLeast("SEATD_QUOTA_INVITATIONS", c.QuotaInvitations, 0)
	positive("SEATD_INVITE_TTL", c.InviteFor)
	if c.NewAccountAge < 0 {
		bad("SEATD_NEW_ACCOUNT_AGE: must not be negative, got %s", c.NewAccountAge)
	}
	atLeast("SEATD_NEW_ACCOUNT_HOLD_CAP", c.NewAccountHoldCap, 1)
	atLeast("SEATD_API_KEY_RATE_PER_MINUTE", c.APIKeyRatePerMinute, 1)
	positive("SEATD_WEBHOOK_TIMEOUT", c.WebhookTimeout)
	positive("SEATD_WEBHOOK_RETRY_FOR", c.WebhookRetryFor)
	positive("SEATD_WEBHOOK_BACKOFF", c.WebhookBackoff)
	positive("SEATD_WEBHOOK_POLL", c.WebhookPoll)
	if c.WebhookBackoffMax < c.WebhookBackoff {
		bad("SEATD_WEBHOOK_BACKOFF_MAX: %s must be at least SEATD_WEBHOOK_BACKOFF (%s)", c.WebhookBackoffMax, c.WebhookBackoff)
	}
	atLeast("SEATD_WEBHOOK_CONCURRENCY", c.WebhookConcurrency, 1)
	if _, err := c.Sender(); err != nil {
		bad("SEATD_MAIL_FROM: %q must be an address or Name <address>", c.MailFrom)
	}
	positive("SEATD_MAIL_POLL", c.MailPoll)
	positive("SEATD_MAIL_RETRY_FOR", c.MailRetryFor)
	if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
		bad("SEATD_PUBLIC_URL: %q must be http(s)://host[:port] with no path", c.PublicURL)
	}
	if c.TicketSecret != "" && len(c.TicketSecret) < 32 {
		bad("SEATD_TICKET_SECRET: must be at least 32 characters (openssl rand -base64 32), got %d", len(c.TicketSecret))
	}
	errs = append(errs, c.listenerProblems()...)
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("SEATD_LOG_LEVEL: %q must be debug, info, warn or error", c.LogLevel)
	}
	if c.PaymentTTL < time.Minute || c.PaymentTTL > MaxPaymentTTL {
		// A payment keeps its seats from everyone else until then.
		bad("SEATD_PAYMENT_TTL: must be 1m to %s, got %s", MaxPaymentTTL, c.PaymentTTL)
	}
	positive("SEATD_PAYMENT_RECONCILE_AFTER", c.PaymentReconcileAfter)
	positive("SEATD_PAYMENT_RECONCILE_INTERVAL", c.PaymentReconcileEvery)
	errs = append(errs, c.stripeProblems()...)
	errs = append(errs, c.paymentsProblems()...)
	return errs
}
