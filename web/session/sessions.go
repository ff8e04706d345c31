// Package session knows who sends a request: scs sessions stored in
// Postgres behind a per-process cache (store.go) that hears every session
// end (sessionend.go), the actor of each request, from its session or its
// API key (load.go), and the role guards of the routes (guards.go). See
// docs/architecture.md#real-time ("Sessions end everywhere") and
// docs/security.md.
package session

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/alexedwards/scs/pgxstore"
	"github.com/alexedwards/scs/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
)

// Session keys. The session holds strings only (see jsonCodec).
const (
	sessOrg     = "org_id"
	sessOrgSlug = "org_slug"
	sessOrgName = "org_name"
	sessUser    = "user_id"
	sessEmail   = "email"
	sessRole    = "role"
	sessFlash   = "flash"
	// sessVerified is "1" once the session has seen its user's email
	// verified (MayHold).
	sessVerified = "email_verified"
	// sessRemember is "1" for a session signed in with "keep me signed
	// in": it lasts RememberFor, idle or not, under a persistent cookie.
	sessRemember = "remember"
	// sessCreated is when a buyer's account was made (Unix seconds):
	// while it is younger than Options.NewAccountAge its actor carries
	// the new accounts' hold cap. The age is worked out on each request,
	// so the setting in force applies to sessions signed in before it.
	sessCreated = "account_created"
	// sessNewUntil is what sessions signed in before sessCreated was kept
	// carry instead: when the account stopped being new under the setting
	// of their sign-in.
	sessNewUntil = "new_until"
)

// Store reads and cleans the session rows and tells whether a user's
// email is verified; *store.Accounts satisfies it.
type Store interface {
	FindSession(ctx context.Context, token string) (data []byte, expiry time.Time, found bool, err error)
	DeleteExpiredSessions(ctx context.Context) (int64, error)
	EmailVerified(ctx context.Context, org, user uuid.UUID) (bool, error)
}

// Hub closes the live sockets of ended sessions, and has every socket
// check its session after a time nobody listened for ends; *live.Hub
// satisfies it.
type Hub interface {
	CloseSession(token string)
	RecheckSessions()
}

// Keys authenticates API keys; *auth.APIKeys satisfies it.
type Keys interface {
	Authenticate(ctx context.Context, secret string) (store.APIKey, error)
}

// Notifier hears the session ends Postgres announces (the process's
// notifier, internal/notify).
type Notifier interface {
	Listen(channel string, fn func(payload string)) (unlisten func())
	OnReady(fn func()) (remove func())
}

// KeyLimit counts a request made with an API key; *ratelimit.Limiter
// satisfies it.
type KeyLimit interface {
	APIKey(ctx context.Context, org, key uuid.UUID) error
}

// Options are what Sessions are built from.
type Options struct {
	// Pool stores the session rows (pgxstore needs the pool itself) and
	// sends the session-end listener's heartbeats.
	Pool     *pgxpool.Pool
	Store    Store
	Devices  DeviceStore
	Notifier Notifier
	Hub      Hub
	Keys     Keys
	KeyLimit KeyLimit
	Errors   *httpx.Errors
	Log      *slog.Logger
	// Lifetime and IdleTimeout end a session (SEATD_SESSION_LIFETIME,
	// SEATD_SESSION_IDLE_TIMEOUT).
	Lifetime, IdleTimeout time.Duration
	// CookieSecure sends the cookie over HTTPS only (COOKIE_SECURE).
	CookieSecure bool
	// NoCache reads and writes every session in Postgres (tests compare).
	NoCache bool
	// ClientIP is the address of a request's client (behind trusted
	// proxies); devices show it truncated.
	ClientIP func(r *http.Request) netip.Addr
	// MaxPerUser caps the sessions of one account
	// (SEATD_MAX_SESSIONS_PER_USER): a sign-in past it ends the oldest.
	MaxPerUser int
	// RememberFor is how long a session signed in with "keep me signed
	// in" lasts, idle or not (SEATD_SESSION_REMEMBER_FOR; 30 days when
	// zero). Other sessions keep Lifetime and IdleTimeout under a cookie
	// that ends with the browser.
	RememberFor time.Duration
	// An account younger than NewAccountAge (SEATD_NEW_ACCOUNT_AGE; 0:
	// none is new) holds at most NewAccountHoldCap seats of an event
	// (SEATD_NEW_ACCOUNT_HOLD_CAP): its actor carries that cap
	// (hold.Actor.HoldCap) until the account is old enough.
	NewAccountAge     time.Duration
	NewAccountHoldCap int
}

// Sessions loads and saves the session of each request and tells whose
// it is. New starts nothing: Run hears the session ends.
type Sessions struct {
	sm       *scs.SessionManager
	store    *sessionStore
	ends     *sessionEnds
	hub      Hub
	keys     Keys
	keyLimit KeyLimit
	errs     *httpx.Errors
	log      *slog.Logger

	accounts   Store
	devices    DeviceStore
	seen       seen
	touches    *touches
	clientIP   func(r *http.Request) netip.Addr
	maxPerUser int
	// rememberFor is a remembered session's lifetime (Options.RememberFor).
	rememberFor time.Duration
	// newAge and newCap: Options.NewAccountAge and NewAccountHoldCap.
	newAge time.Duration
	newCap int
}

// New builds the sessions.
func New(o Options) *Sessions {
	st := &sessionStore{
		db:      pgxstore.NewWithCleanupInterval(o.Pool, 0), // cleanup runs from Commit, without a goroutine
		find:    o.Store.FindSession,
		cleanup: o.Store.DeleteExpiredSessions,
		log:     o.Log.With("component", "sessions"),
		now:     time.Now,
		entries: map[string]*sessionEntry{},
	}
	touches := newTouches(o.Devices, o.Log.With("component", "session_touches"))
	if !o.NoCache {
		st.fresh = sessionFresh
		st.touch = min(o.IdleTimeout/10, sessionTouchMax)
		st.refresh = func(token string, expiry time.Time) {
			touches.add(store.SessionTouch{Token: token, Expiry: expiry})
		}
	}
	sm := scs.New()
	sm.Store = st
	sm.Codec = newJSONCodec()
	sm.Lifetime = o.Lifetime
	sm.IdleTimeout = o.IdleTimeout
	// A database dump must not hand out live sessions.
	sm.HashTokenInStore = true
	sm.Cookie.Name = "seatd_session"
	if o.CookieSecure {
		// __Host- binds the cookie to this host, Secure and Path=/.
		sm.Cookie.Name = "__Host-seatd_session"
	}
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Secure = o.CookieSecure
	sm.Cookie.Path = "/"
	// A cookie that ends with the browser, unless the session is
	// remembered (writeCookie).
	sm.Cookie.Persist = false
	rememberFor := o.RememberFor
	if rememberFor <= 0 {
		rememberFor = 30 * 24 * time.Hour
	}
	st.remembered = func(b []byte) (time.Time, bool) {
		deadline, values, err := sm.Codec.Decode(b)
		return deadline, err == nil && values[sessRemember] == "1"
	}
	maxPerUser := o.MaxPerUser
	if maxPerUser <= 0 {
		maxPerUser = 20
	}
	return &Sessions{sm: sm, store: st, hub: o.Hub, keys: o.Keys, keyLimit: o.KeyLimit, errs: o.Errors, log: o.Log,
		ends:     newSessionEnds(o.Pool, o.Notifier, st, o.Hub, o.Log.With("component", "session_ends")),
		accounts: o.Store, devices: o.Devices, seen: seen{last: map[string]time.Time{}}, touches: touches, clientIP: o.ClientIP, maxPerUser: maxPerUser,
		rememberFor: rememberFor, newAge: o.NewAccountAge, newCap: o.NewAccountHoldCap}
}

// Run hears session ends through the notifier, and proves it does (see
// sessionEnds), and writes the sessions' housekeeping (touches), until
// ctx ends.
func (s *Sessions) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.touches.run(ctx) })
	s.ends.run(ctx)
	wg.Wait()
}

// CookieName is the session cookie's name.
func (s *Sessions) CookieName() string { return s.sm.Cookie.Name }

// Account is who a session belongs to, as stored at sign-in: the ids make
// the request's actor, the names show on pages.
type Account struct {
	Org     uuid.UUID
	OrgSlug string
	OrgName string
	User    uuid.UUID
	Email   string
	Role    hold.Role
	// Verified: the user's email was verified at sign-in.
	Verified bool
	// Remember: "keep me signed in" (Options.RememberFor).
	Remember bool
	// CreatedAt is when the account was made: a new one's holds are
	// capped lower (Options.NewAccountAge).
	CreatedAt time.Time
}

// SignIn starts a session for acct with a fresh token (no fixation),
// saves it now, so the caller knows it worked, and records it among the
// user's devices (ending their oldest sessions past the cap).
func (s *Sessions) SignIn(w http.ResponseWriter, r *http.Request, acct Account) error {
	ctx := r.Context()
	if err := s.sm.RenewToken(ctx); err != nil {
		return err
	}
	for k, v := range map[string]string{
		sessOrg: acct.Org.String(), sessOrgSlug: acct.OrgSlug, sessOrgName: acct.OrgName,
		sessUser: acct.User.String(), sessEmail: acct.Email, sessRole: string(acct.Role),
	} {
		s.sm.Put(ctx, k, v)
	}
	if acct.Verified {
		s.sm.Put(ctx, sessVerified, "1")
	}
	if acct.Role == hold.RoleBuyer && !acct.CreatedAt.IsZero() {
		s.sm.Put(ctx, sessCreated, strconv.FormatInt(acct.CreatedAt.Unix(), 10))
	}
	if acct.Remember {
		s.sm.Put(ctx, sessRemember, "1")
		s.sm.SetDeadline(ctx, time.Now().Add(s.rememberFor).UTC())
	}
	if err := s.save(w, r); err != nil {
		return err
	}
	return s.recordDevice(r, acct, storedToken(s.sm.Token(ctx)))
}

// SignOut ends the request's session, if it has one: its live sockets
// close, its token is deleted from the store (and this process's cache)
// and the cookie is expired. The delete announces the end to every
// process (sessionEnds), so the session's sockets close everywhere.
func (s *Sessions) SignOut(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	token := s.sm.Token(ctx)
	if token == "" {
		return nil
	}
	s.hub.CloseSession(storedToken(token))
	if err := s.sm.Destroy(ctx); err != nil {
		return err
	}
	return s.save(w, r)
}

// Account is the account the request's session was signed in as (zero
// without a session, and for API keys, which have none).
func (s *Sessions) Account(ctx context.Context) Account {
	org, _ := uuid.Parse(s.sm.GetString(ctx, sessOrg))
	user, _ := uuid.Parse(s.sm.GetString(ctx, sessUser))
	return Account{Org: org, OrgSlug: s.sm.GetString(ctx, sessOrgSlug), OrgName: s.sm.GetString(ctx, sessOrgName),
		User: user, Email: s.sm.GetString(ctx, sessEmail), Role: hold.Role(s.sm.GetString(ctx, sessRole))}
}

// Flash keeps a message for the next page the session shows (after a
// redirect).
func (s *Sessions) Flash(ctx context.Context, msg string) { s.sm.Put(ctx, sessFlash, msg) }

// PopFlash takes the flash message, if any, out of the session.
func (s *Sessions) PopFlash(ctx context.Context) string { return s.sm.PopString(ctx, sessFlash) }

// StoredToken is the request's session token as the store and the live
// hub know it.
func (s *Sessions) StoredToken(ctx context.Context) string { return storedToken(s.sm.Token(ctx)) }

// Stats are the session reads and writes that reached Postgres.
type Stats struct {
	Finds, Commits int64
}

// Stats counts the session reads and writes that reached Postgres so far
// (the cache's benefit; the tests and the benchmark read it).
func (s *Sessions) Stats() Stats {
	return Stats{Finds: s.store.dbFinds.Load(), Commits: s.store.dbCommits.Load()}
}

// storedToken is the token as scs hands it to the store
// (HashTokenInStore).
func storedToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(h[:])
}
