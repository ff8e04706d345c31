// Package config reads seatd's configuration from environment variables,
// applies defaults and validates the result once at start.
package config

import (
	"errors"
	"fmt"
	"net/mail"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Config is every setting seatd reads from its environment.
type Config struct {
	Env         string // SEATD_ENV: development | test | production
	Addr        string // SEATD_ADDR
	DatabaseURL string // DATABASE_URL
	RedisURL    string // REDIS_URL (redis://host:port/db; several comma-separated addresses for a cluster)
	KeyPrefix   string // SEATD_KEY_PREFIX

	HoldTTL            time.Duration // SEATD_HOLD_TTL
	FeedInterval       time.Duration // SEATD_FEED_INTERVAL: how often each process reads the change feed
	WaitlistOfferTTL   time.Duration // SEATD_WAITLIST_OFFER_TTL: how long an offer holds a waiting buyer's seats
	WaitlistInterval   time.Duration // SEATD_WAITLIST_INTERVAL: how often each process looks for waitlist work it was not told of (a backstop: the statements that queue it announce it)
	CacheIdle          time.Duration // SEATD_CACHE_IDLE: an event nobody watched or asked about this long leaves the hot cache
	WarmEvents         int           // SEATD_WARM_EVENTS: on-sale events loaded into the hot cache at startup (0: none)
	WarmSeats          int           // SEATD_WARM_SEATS: at most this many seats in all kept warm (past the first event)
	WarmInterval       time.Duration // SEATD_WARM_INTERVAL: how often each process warms on-sale events it has not (published elsewhere since)
	HoldExtension      time.Duration // SEATD_HOLD_EXTENSION
	MaxExtensions      int           // SEATD_MAX_EXTENSIONS
	LockMargin         time.Duration // SEATD_LOCK_MARGIN: Redis lock TTL beyond held_until
	MaxHoldsPerBuyer   int           // SEATD_MAX_HOLDS_PER_BUYER (active holds per buyer per event)
	MaxSeatsPerRequest int           // SEATD_MAX_SEATS_PER_REQUEST

	ReaperInterval time.Duration // SEATD_REAPER_INTERVAL
	ReaperBatch    int           // SEATD_REAPER_BATCH

	RedisDialTimeout time.Duration // SEATD_REDIS_DIAL_TIMEOUT
	RedisTimeout     time.Duration // SEATD_REDIS_TIMEOUT (read and write)
	RedisMaxRetries  int           // SEATD_REDIS_MAX_RETRIES
	BreakerFailures  int           // SEATD_BREAKER_FAILURES: consecutive failures that open the breaker
	BreakerOpenFor   time.Duration // SEATD_BREAKER_OPEN_FOR: how long it stays open before probing

	PGMaxConns         int           // SEATD_PG_MAX_CONNS
	HoldBatchMax       int           // SEATD_HOLD_BATCH_MAX: hold requests coalesced into one statement (single seats) or one transaction (several seats, or the orphan rule), and Redis lock scripts into one pipeline, at most (1 turns coalescing off)
	HoldBatchSlots     int           // SEATD_HOLD_BATCH_SLOTS: coalesced hold statements, as many transactions and as many Redis pipelines, running at once, the statements and transactions on 2×slots Postgres connections of their own besides SEATD_PG_MAX_CONNS (2: one may wait on a row lock while the other goes on; 1 was ~8 % faster and 4 ~15 % slower at 50 buyers; 4 transactions were no faster than 2 for 500 best-available requests)
	PGLockTimeout      time.Duration // SEATD_PG_LOCK_TIMEOUT
	PGStatementTimeout time.Duration // SEATD_PG_STATEMENT_TIMEOUT

	SessionLifetime    time.Duration // SEATD_SESSION_LIFETIME
	SessionIdleTimeout time.Duration // SEATD_SESSION_IDLE_TIMEOUT
	CookieSecure       bool          // COOKIE_SECURE
	HoldRatePerMinute  int           // SEATD_HOLD_RATE_PER_MINUTE (per user)
	LoginRatePerMinute int           // SEATD_LOGIN_RATE_PER_MINUTE (per IP)
	SnapshotInterval   time.Duration // SEATD_SNAPSHOT_INTERVAL
	ShutdownTimeout    time.Duration // SEATD_SHUTDOWN_TIMEOUT
	LogLevel           string        // SEATD_LOG_LEVEL: debug | info | warn | error
	OpsAddr            string        // SEATD_OPS_ADDR: host:port of the ops listener (/metrics, pprof); "off" disables it; a loopback or private address unless OpsPublic
	OpsPublic          bool          // SEATD_OPS_PUBLIC: allow SEATD_OPS_ADDR on any address (all interfaces, a public one, a host name)
	PprofAddr          string        // SEATD_PPROF_ADDR: former pprof listener, now an alias of SEATD_OPS_ADDR (loopback only)
	RedisUsername      string        // SEATD_REDIS_USERNAME: Redis ACL user (cluster addresses, or a URL without one)
	RedisPassword      string        // SEATD_REDIS_PASSWORD: Redis password (cluster addresses, or a URL without one)

	// Login limits and sockets (abuse).
	TrustedProxies        []netip.Prefix // SEATD_TRUSTED_PROXIES: comma-separated CIDRs whose X-Forwarded-For is believed; empty trusts none
	LoginAccountFailures  int            // SEATD_LOGIN_ACCOUNT_FAILURES: failed logins of one account (org + email) before it locks
	LoginLockout          time.Duration  // SEATD_LOGIN_LOCKOUT: first lockout; each further failure doubles it
	LoginLockoutMax       time.Duration  // SEATD_LOGIN_LOCKOUT_MAX: longest lockout
	MaxPasswordHashes     int            // SEATD_MAX_PASSWORD_HASHES: password hashes running at once (0: half the CPUs, at least 1)
	MaxSockets            int            // SEATD_MAX_SOCKETS: live sockets per process
	MaxSocketsPerSession  int            // SEATD_MAX_SOCKETS_PER_SESSION: live sockets per session per process
	MaxSessionsPerUser    int            // SEATD_MAX_SESSIONS_PER_USER: signed-in sessions per account; a new one ends the oldest
	UpgradeRatePerMinute  int            // SEATD_UPGRADE_RATE_PER_MINUTE: live socket upgrades per client IP
	RegistryCheckCooldown time.Duration  // SEATD_REGISTRY_COOLDOWN: an event's registry check or reconcile runs at most once per this
	ChartUploads          int            // SEATD_CHART_UPLOADS: chart uploads read and decoded at once per process (a few more wait briefly; the rest get 503 with Retry-After)

	// Reads that answer a whole event (the seat list, the map), per
	// minute: per account or API key, and per client network (IPv4 /24,
	// IPv6 /64).
	ReadRatePerMinute       int // SEATD_READ_RATE_PER_MINUTE
	ReadPrefixRatePerMinute int // SEATD_READ_PREFIX_RATE_PER_MINUTE

	// Live sockets per process beside SEATD_MAX_SOCKETS_PER_SESSION: per
	// account, whatever its sessions, and per client network (IPv4 /24,
	// IPv6 /64).
	MaxSocketsPerUser    int // SEATD_MAX_SOCKETS_PER_USER
	MaxSocketsPerNetwork int // SEATD_MAX_SOCKETS_PER_NETWORK
	// LiveTick is the least time between two seat-map frames of one
	// event to a socket: faster changes go together, one frame a tick.
	LiveTick time.Duration // SEATD_LIVE_TICK

	// Accounts made and sessions begun per client network (IPv4 /24, IPv6
	// /64) per minute: sign-ups have a limit of their own, apart from
	// sign-ins'; new sessions (successful sign-ins) are limited too, so a
	// script with many accounts cannot open a burst of them.
	SignupRatePerMinute     int // SEATD_SIGNUP_RATE_PER_MINUTE
	NewSessionRatePerMinute int // SEATD_NEW_SESSION_RATE_PER_MINUTE

	// SessionRememberFor is how long a session signed in with "keep me
	// signed in" lasts, idle or not, under a persistent cookie.
	SessionRememberFor time.Duration // SEATD_SESSION_REMEMBER_FOR

	// Quotas per organization (0: no limit).
	QuotaCharts   int // SEATD_QUOTA_CHARTS: charts
	QuotaEvents   int // SEATD_QUOTA_EVENTS: open events (drafts and on sale)
	QuotaAPIKeys  int // SEATD_QUOTA_API_KEYS: API keys not revoked
	QuotaWebhooks int // SEATD_QUOTA_WEBHOOKS: webhook endpoints
	// QuotaInvitations: pending invitations (neither accepted, revoked
	// nor expired).
	QuotaInvitations int // SEATD_QUOTA_INVITATIONS

	// InviteFor is how long an emailed invitation's link works.
	InviteFor time.Duration // SEATD_INVITE_TTL

	// Accounts younger than NewAccountAge hold at most NewAccountHoldCap
	// seats of an event (or the event's own cap, if lower): the accounts
	// a script makes by the hundred cannot each take a buyer's full share.
	NewAccountAge     time.Duration // SEATD_NEW_ACCOUNT_AGE (0: no account counts as new)
	NewAccountHoldCap int           // SEATD_NEW_ACCOUNT_HOLD_CAP

	// Integrators.
	APIKeyRatePerMinute int           // SEATD_API_KEY_RATE_PER_MINUTE: requests per API key
	WebhookAllowPrivate bool          // SEATD_WEBHOOK_ALLOW_PRIVATE: allow webhook URLs on loopback and private addresses
	WebhookTimeout      time.Duration // SEATD_WEBHOOK_TIMEOUT: one delivery attempt
	WebhookRetryFor     time.Duration // SEATD_WEBHOOK_RETRY_FOR: give a delivery up this long after its change
	WebhookBackoff      time.Duration // SEATD_WEBHOOK_BACKOFF: wait after a first failed attempt (doubles per failure)
	WebhookBackoffMax   time.Duration // SEATD_WEBHOOK_BACKOFF_MAX: longest wait between attempts
	WebhookPoll         time.Duration // SEATD_WEBHOOK_POLL: how often an idle worker looks for due deliveries it was not told of (a backstop: the statements that queue them announce them)
	WebhookConcurrency  int           // SEATD_WEBHOOK_CONCURRENCY: attempts in flight per process

	// Mail.
	SMTPURL      string        // SEATD_SMTP_URL: the SMTP server mail goes out through (internal/mail.ParseURL); empty: mail stays queued
	MailFrom     string        // SEATD_MAIL_FROM: default sender, "Name <address>" or an address
	MailPoll     time.Duration // SEATD_MAIL_POLL: how often an idle mail worker looks for due mail without being woken
	MailRetryFor time.Duration // SEATD_MAIL_RETRY_FOR: give a message up this long after it was enqueued
	PublicURL    string        // SEATD_PUBLIC_URL: where people reach seatd (scheme and host, no path): the links in mail start with it

	// Tickets.
	TicketSecret string // SEATD_TICKET_SECRET: seals the events' ticket signing keys and the webhook signing secrets in Postgres, each under a key of its own (at least 32 characters; production must set its own)

	// Payments (docs/payments.md): with both Stripe keys set buyers pay
	// through Stripe; with neither, through the embedded test provider.
	StripeSecretKey       string        // STRIPE_SECRET_KEY: sk_… (or a restricted rk_…) key of the Stripe account
	StripePublishableKey  string        // STRIPE_PUBLISHABLE_KEY: pk_… key the buyer's page loads Stripe.js with
	StripeWebhookSecret   string        // STRIPE_WEBHOOK_SECRET: whsec_… signing secret of the webhook endpoint (the test provider generates one when unset)
	StripeAPIBase         string        // SEATD_STRIPE_API_BASE: Stripe API base URL; empty for Stripe itself (stripe-mock in tests)
	PaymentTTL            time.Duration // SEATD_PAYMENT_TTL: how long a buyer has to pay once they start; their holds are kept until then (at most 1h)
	PaymentReconcileAfter time.Duration // SEATD_PAYMENT_RECONCILE_AFTER: a payment without news this long is asked about at the provider
	PaymentReconcileEvery time.Duration // SEATD_PAYMENT_RECONCILE_INTERVAL: how often each process's reconciler looks for such payments
	Payments              string        // SEATD_PAYMENTS: "required" (buyers pay before seats are theirs) or "off" (a buyer's purchase books without payment: tests, the bench)

	// The waiting room (docs/waiting-room.md).
	QueueSecret     string        // SEATD_QUEUE_SECRET: signs admissions (at least 32 characters; default: SEATD_TICKET_SECRET, under a key derived for this use alone)
	QueueAdmission  time.Duration // SEATD_QUEUE_ADMISSION: how long an admission is valid without use (renewed while the visitor is active; at least 1m)
	QueueHoldTarget time.Duration // SEATD_QUEUE_HOLD_P99: the hold p99 an automatic waiting room keeps under
}

// DevTicketSecret is SEATD_TICKET_SECRET outside production when it is not
// set. It is published, so it protects nothing; it is fixed rather than
// drawn at each start so a development database's sealed keys still open
// after a restart.
const DevTicketSecret = "seatd-development-ticket-secret-not-for-production"

// DefaultOpsAddr is where the ops listener serves unless SEATD_OPS_ADDR
// says otherwise; OpsOff turns it off.
const (
	DefaultOpsAddr = "127.0.0.1:9090"
	OpsOff         = "off"
)

// Defaults returns the configuration used when no variable is set.
func Defaults() Config {
	return Config{
		Env:                "development",
		Addr:               ":8080",
		KeyPrefix:          "seatd",
		HoldTTL:            15 * time.Minute,
		FeedInterval:       250 * time.Millisecond,
		WaitlistOfferTTL:   10 * time.Minute,
		QueueAdmission:     5 * time.Minute,
		QueueHoldTarget:    250 * time.Millisecond,
		WaitlistInterval:   5 * time.Second,
		CacheIdle:          10 * time.Minute,
		WarmEvents:         20,
		WarmSeats:          2_000_000,
		WarmInterval:       5 * time.Second,
		HoldExtension:      5 * time.Minute,
		MaxExtensions:      1,
		LockMargin:         time.Minute,
		MaxHoldsPerBuyer:   10,
		MaxSeatsPerRequest: 10,
		ReaperInterval:     time.Second,
		ReaperBatch:        500,
		RedisDialTimeout:   500 * time.Millisecond,
		RedisTimeout:       250 * time.Millisecond,
		RedisMaxRetries:    1,
		BreakerFailures:    3,
		BreakerOpenFor:     2 * time.Second,
		PGMaxConns:         40,
		HoldBatchMax:       64,
		HoldBatchSlots:     2,
		PGLockTimeout:      500 * time.Millisecond,
		PGStatementTimeout: 5 * time.Second,
		SessionLifetime:    24 * time.Hour,
		SessionIdleTimeout: 2 * time.Hour,
		HoldRatePerMinute:  120,
		LoginRatePerMinute: 20,
		SnapshotInterval:   30 * time.Second,
		ShutdownTimeout:    10 * time.Second,
		LogLevel:           "info",
		// Loopback: metrics and profiles are for the host's own agents
		// (or a private network the operator names), never the public.
		OpsAddr: DefaultOpsAddr,

		LoginAccountFailures:  5,
		LoginLockout:          30 * time.Second,
		LoginLockoutMax:       15 * time.Minute,
		MaxSockets:            20000,
		MaxSocketsPerSession:  8,
		MaxSessionsPerUser:    20,
		UpgradeRatePerMinute:  240,
		RegistryCheckCooldown: 5 * time.Second,
		ChartUploads:          2,
		QuotaCharts:           100,
		QuotaEvents:           200,
		QuotaAPIKeys:          50,
		QuotaWebhooks:         20,
		QuotaInvitations:      500,
		InviteFor:             7 * 24 * time.Hour,
		NewAccountAge:         24 * time.Hour,
		NewAccountHoldCap:     4,

		ReadRatePerMinute:       120,
		ReadPrefixRatePerMinute: 3000,

		MaxSocketsPerUser:    16,
		MaxSocketsPerNetwork: 1000,
		LiveTick:             100 * time.Millisecond,

		SignupRatePerMinute:     10,
		NewSessionRatePerMinute: 60,

		SessionRememberFor: 30 * 24 * time.Hour,

		APIKeyRatePerMinute: 6000,
		WebhookTimeout:      10 * time.Second,
		WebhookRetryFor:     24 * time.Hour,
		WebhookBackoff:      time.Second,
		WebhookBackoffMax:   time.Hour,
		WebhookPoll:         5 * time.Second,
		WebhookConcurrency:  32,

		MailFrom:     "seatd <no-reply@localhost>",
		MailPoll:     5 * time.Second,
		MailRetryFor: 48 * time.Hour,
		PublicURL:    "http://localhost:8080",

		PaymentTTL:            15 * time.Minute,
		PaymentReconcileAfter: 3 * time.Minute,
		PaymentReconcileEvery: 30 * time.Second,
		Payments:              PaymentsRequired,
	}
}

// Load builds a Config from getenv (os.Getenv in production, a map in tests)
// and validates it. Every problem is reported, not just the first.
func Load(getenv func(string) string) (Config, error) {
	c := Defaults()
	var errs []error
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	dur := func(name string, dst *time.Duration) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a duration like 15m or 500ms", name, v))
				return
			}
			*dst = d
		}
	}
	num := func(name string, dst *int) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not an integer", name, v))
				return
			}
			*dst = n
		}
	}
	boolean := func(name string, dst *bool) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not true or false", name, v))
				return
			}
			*dst = b
		}
	}

	str("SEATD_ENV", &c.Env)
	str("SEATD_ADDR", &c.Addr)
	str("DATABASE_URL", &c.DatabaseURL)
	str("REDIS_URL", &c.RedisURL)
	str("SEATD_KEY_PREFIX", &c.KeyPrefix)
	dur("SEATD_HOLD_TTL", &c.HoldTTL)
	dur("SEATD_FEED_INTERVAL", &c.FeedInterval)
	dur("SEATD_WAITLIST_OFFER_TTL", &c.WaitlistOfferTTL)
	dur("SEATD_WAITLIST_INTERVAL", &c.WaitlistInterval)
	dur("SEATD_CACHE_IDLE", &c.CacheIdle)
	num("SEATD_WARM_EVENTS", &c.WarmEvents)
	num("SEATD_WARM_SEATS", &c.WarmSeats)
	dur("SEATD_WARM_INTERVAL", &c.WarmInterval)
	dur("SEATD_HOLD_EXTENSION", &c.HoldExtension)
	num("SEATD_MAX_EXTENSIONS", &c.MaxExtensions)
	dur("SEATD_LOCK_MARGIN", &c.LockMargin)
	num("SEATD_MAX_HOLDS_PER_BUYER", &c.MaxHoldsPerBuyer)
	num("SEATD_MAX_SEATS_PER_REQUEST", &c.MaxSeatsPerRequest)
	dur("SEATD_REAPER_INTERVAL", &c.ReaperInterval)
	num("SEATD_REAPER_BATCH", &c.ReaperBatch)
	dur("SEATD_REDIS_DIAL_TIMEOUT", &c.RedisDialTimeout)
	dur("SEATD_REDIS_TIMEOUT", &c.RedisTimeout)
	num("SEATD_REDIS_MAX_RETRIES", &c.RedisMaxRetries)
	num("SEATD_BREAKER_FAILURES", &c.BreakerFailures)
	dur("SEATD_BREAKER_OPEN_FOR", &c.BreakerOpenFor)
	num("SEATD_PG_MAX_CONNS", &c.PGMaxConns)
	num("SEATD_HOLD_BATCH_MAX", &c.HoldBatchMax)
	num("SEATD_HOLD_BATCH_SLOTS", &c.HoldBatchSlots)
	dur("SEATD_PG_LOCK_TIMEOUT", &c.PGLockTimeout)
	dur("SEATD_PG_STATEMENT_TIMEOUT", &c.PGStatementTimeout)
	dur("SEATD_SESSION_LIFETIME", &c.SessionLifetime)
	dur("SEATD_SESSION_IDLE_TIMEOUT", &c.SessionIdleTimeout)
	boolean("COOKIE_SECURE", &c.CookieSecure)
	num("SEATD_HOLD_RATE_PER_MINUTE", &c.HoldRatePerMinute)
	num("SEATD_LOGIN_RATE_PER_MINUTE", &c.LoginRatePerMinute)
	dur("SEATD_SNAPSHOT_INTERVAL", &c.SnapshotInterval)
	dur("SEATD_SHUTDOWN_TIMEOUT", &c.ShutdownTimeout)
	str("SEATD_LOG_LEVEL", &c.LogLevel)
	str("SEATD_PPROF_ADDR", &c.PprofAddr)
	if c.PprofAddr != "" {
		c.OpsAddr = c.PprofAddr
	}
	str("SEATD_OPS_ADDR", &c.OpsAddr)
	boolean("SEATD_OPS_PUBLIC", &c.OpsPublic)
	c.RedisUsername = getenv("SEATD_REDIS_USERNAME")
	c.RedisPassword = getenv("SEATD_REDIS_PASSWORD")
	if v := strings.TrimSpace(getenv("SEATD_TRUSTED_PROXIES")); v != "" {
		for _, part := range strings.Split(v, ",") {
			p, err := netip.ParsePrefix(strings.TrimSpace(part))
			if err != nil {
				errs = append(errs, fmt.Errorf("SEATD_TRUSTED_PROXIES: %q is not a CIDR like 10.0.0.0/8", strings.TrimSpace(part)))
				continue
			}
			c.TrustedProxies = append(c.TrustedProxies, p.Masked())
		}
	}
	num("SEATD_LOGIN_ACCOUNT_FAILURES", &c.LoginAccountFailures)
	dur("SEATD_LOGIN_LOCKOUT", &c.LoginLockout)
	dur("SEATD_LOGIN_LOCKOUT_MAX", &c.LoginLockoutMax)
	num("SEATD_MAX_PASSWORD_HASHES", &c.MaxPasswordHashes)
	num("SEATD_MAX_SOCKETS", &c.MaxSockets)
	num("SEATD_MAX_SOCKETS_PER_SESSION", &c.MaxSocketsPerSession)
	num("SEATD_MAX_SESSIONS_PER_USER", &c.MaxSessionsPerUser)
	num("SEATD_UPGRADE_RATE_PER_MINUTE", &c.UpgradeRatePerMinute)
	num("SEATD_READ_RATE_PER_MINUTE", &c.ReadRatePerMinute)
	num("SEATD_READ_PREFIX_RATE_PER_MINUTE", &c.ReadPrefixRatePerMinute)
	num("SEATD_MAX_SOCKETS_PER_USER", &c.MaxSocketsPerUser)
	num("SEATD_MAX_SOCKETS_PER_NETWORK", &c.MaxSocketsPerNetwork)
	dur("SEATD_LIVE_TICK", &c.LiveTick)
	num("SEATD_SIGNUP_RATE_PER_MINUTE", &c.SignupRatePerMinute)
	num("SEATD_NEW_SESSION_RATE_PER_MINUTE", &c.NewSessionRatePerMinute)
	dur("SEATD_SESSION_REMEMBER_FOR", &c.SessionRememberFor)
	dur("SEATD_REGISTRY_COOLDOWN", &c.RegistryCheckCooldown)
	num("SEATD_CHART_UPLOADS", &c.ChartUploads)
	num("SEATD_QUOTA_CHARTS", &c.QuotaCharts)
	num("SEATD_QUOTA_EVENTS", &c.QuotaEvents)
	num("SEATD_QUOTA_API_KEYS", &c.QuotaAPIKeys)
	num("SEATD_QUOTA_WEBHOOKS", &c.QuotaWebhooks)
	num("SEATD_QUOTA_INVITATIONS", &c.QuotaInvitations)
	dur("SEATD_INVITE_TTL", &c.InviteFor)
	dur("SEATD_NEW_ACCOUNT_AGE", &c.NewAccountAge)
	num("SEATD_NEW_ACCOUNT_HOLD_CAP", &c.NewAccountHoldCap)
	num("SEATD_API_KEY_RATE_PER_MINUTE", &c.APIKeyRatePerMinute)
	boolean("SEATD_WEBHOOK_ALLOW_PRIVATE", &c.WebhookAllowPrivate)
	dur("SEATD_WEBHOOK_TIMEOUT", &c.WebhookTimeout)
	dur("SEATD_WEBHOOK_RETRY_FOR", &c.WebhookRetryFor)
	dur("SEATD_WEBHOOK_BACKOFF", &c.WebhookBackoff)
	dur("SEATD_WEBHOOK_BACKOFF_MAX", &c.WebhookBackoffMax)
	dur("SEATD_WEBHOOK_POLL", &c.WebhookPoll)
	num("SEATD_WEBHOOK_CONCURRENCY", &c.WebhookConcurrency)
	str("SEATD_SMTP_URL", &c.SMTPURL)
	str("SEATD_MAIL_FROM", &c.MailFrom)
	dur("SEATD_MAIL_POLL", &c.MailPoll)
	dur("SEATD_MAIL_RETRY_FOR", &c.MailRetryFor)
	str("SEATD_PUBLIC_URL", &c.PublicURL)
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	str("SEATD_TICKET_SECRET", &c.TicketSecret)
	if c.TicketSecret == "" && c.Env != EnvProduction {
		c.TicketSecret = DevTicketSecret
	}
	str("SEATD_QUEUE_SECRET", &c.QueueSecret)
	if c.QueueSecret == "" {
		c.QueueSecret = c.TicketSecret
	}
	dur("SEATD_QUEUE_ADMISSION", &c.QueueAdmission)
	dur("SEATD_QUEUE_HOLD_P99", &c.QueueHoldTarget)
	str("STRIPE_SECRET_KEY", &c.StripeSecretKey)
	str("STRIPE_PUBLISHABLE_KEY", &c.StripePublishableKey)
	str("STRIPE_WEBHOOK_SECRET", &c.StripeWebhookSecret)
	str("SEATD_STRIPE_API_BASE", &c.StripeAPIBase)
	dur("SEATD_PAYMENT_TTL", &c.PaymentTTL)
	dur("SEATD_PAYMENT_RECONCILE_AFTER", &c.PaymentReconcileAfter)
	dur("SEATD_PAYMENT_RECONCILE_INTERVAL", &c.PaymentReconcileEvery)
	str("SEATD_PAYMENTS", &c.Payments)

	errs = append(errs, c.validate()...)
	return c, errors.Join(errs...)
}

// Environments in which seatd may run.
const (
	EnvDevelopment = "development"
	EnvTest        = "test"
	EnvProduction  = "production"
)

// Sender is SEATD_MAIL_FROM parsed.
func (c Config) Sender() (mail.Address, error) {
	a, err := mail.ParseAddress(c.MailFrom)
	if err != nil {
		return mail.Address{}, err
	}
	return *a, nil
}

// DemoAllowed tells whether the demo accounts (with a published password)
// may be created: only in development and test.
func (c Config) DemoAllowed() bool {
	return c.Env == EnvDevelopment || c.Env == EnvTest
}
