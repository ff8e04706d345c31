package web

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alexedwards/scs/pgxstore"
	"github.com/alexedwards/scs/v2"
	"github.com/google/uuid"

	"seatd/internal/hold"
)

// Session keys. The session holds strings only (see jsonCodec).
const (
	sessOrg     = "org_id"
	sessOrgSlug = "org_slug"
	sessOrgName = "org_name"
	sessUser    = "user_id"
	sessEmail   = "email"
	sessRole    = "role"
)

// Session cache settings.
const (
	// sessionFresh bounds how long another process keeps accepting a
	// token after a logout elsewhere (the process that handled the logout
	// refuses it at once). A process trusts its cached copy of a session
	// for sessionFresh after reading it from Postgres, or for as long as
	// it has heard every announced end (sessionEnds) within sessionFresh.
	sessionFresh = time.Second
	// sessionTrusted caps how long a copy is kept on announcements alone
	// before Postgres is asked again.
	sessionTrusted = time.Minute
	// sessionTouchMax caps how far a session's stored expiry may lag behind
	// its idle deadline before the refresh is written to Postgres.
	sessionTouchMax = time.Minute
	// sessionCacheMax bounds the cache; beyond it, idle entries are dropped.
	sessionCacheMax = 100_000
	// sessionCacheIdle is how long an entry nobody used stays cached. Losing
	// it only costs a read and a write the next time the session is used.
	sessionCacheIdle = 5 * time.Minute
	// sessionCleanupEvery is how often expired rows are deleted.
	sessionCleanupEvery = 10 * time.Minute
)

func newSessions(d Deps, cached bool) (*scs.SessionManager, *sessionStore) {
	st := &sessionStore{
		db:      pgxstore.NewWithCleanupInterval(d.Pool, 0), // cleanup runs from Commit, without a goroutine
		find:    d.Store.Accounts.FindSession,
		cleanup: d.Store.Accounts.DeleteExpiredSessions,
		log:     d.Log.With("component", "sessions"),
		now:     time.Now,
		entries: map[string]*sessionEntry{},
	}
	if cached {
		st.fresh = sessionFresh
		st.touch = min(d.Cfg.SessionIdleTimeout/10, sessionTouchMax)
	}
	sm := scs.New()
	sm.Store = st
	sm.Codec = newJSONCodec()
	sm.Lifetime = d.Cfg.SessionLifetime
	sm.IdleTimeout = d.Cfg.SessionIdleTimeout
	// A database dump must not hand out live sessions.
	sm.HashTokenInStore = true
	sm.Cookie.Name = "seatd_session"
	if d.Cfg.CookieSecure {
		// __Host- binds the cookie to this host, Secure and Path=/.
		sm.Cookie.Name = "__Host-seatd_session"
	}
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Secure = d.Cfg.CookieSecure
	sm.Cookie.Path = "/"
	sm.Cookie.Persist = true
	return sm, st
}

// sessionStore is the scs store: Postgres (pgxstore) behind a small
// per-process cache. Without it every authenticated request costs a
// SELECT and, because of the idle timeout, an UPSERT of the session row.
//
//   - Find answers from the cache while the entry is younger than fresh,
//     or while it is told of every end (told), otherwise asks Postgres;
//     never past the entry's stored expiry.
//   - Commit skips the write when the data is unchanged and the new expiry
//     is less than touch past the stored one: the idle timeout is then
//     enforced to within touch (a session idle for IdleTimeout-touch may
//     already be gone), never beyond it.
//   - Delete removes the entry here before Postgres, so the process that
//     handles a logout refuses the token at once; others within fresh.
type sessionStore struct {
	db scs.Store // writes and deletes
	// find reads a live session with its expiry.
	find    func(ctx context.Context, token string) ([]byte, time.Time, bool, error)
	cleanup func(context.Context) (int64, error)
	log     *slog.Logger
	now     func() time.Time
	fresh   time.Duration // 0: no cache
	touch   time.Duration

	mu          sync.Mutex
	entries     map[string]*sessionEntry
	lastSweep   time.Time
	lastCleanup time.Time
	// What sessionEnds has heard: while listening, every end committed
	// since it began listening (since) and before heard has been applied
	// here; ends counts the announcements applied, so a read that one
	// raced is not trusted on announcements.
	listening bool
	since     time.Time
	heard     time.Time
	ends      uint64

	// Round trips to Postgres, for tests and the benchmark.
	dbFinds, dbCommits atomic.Int64
	// used is when Find last ran (Unix ns): the listener proves it hears
	// every end only while the cache is in use (sessionEnds.beat).
	used atomic.Int64
}

type sessionEntry struct {
	data    []byte
	expiry  time.Time // as stored in Postgres
	checked time.Time // when the read or write that confirmed data began
	// announced: the listener was listening when that began, and no end
	// was applied until it finished; so any end of it since is heard.
	announced bool
}

var _ scs.Store = (*sessionStore)(nil)

// Find returns a session's data.
func (s *sessionStore) Find(token string) ([]byte, bool, error) {
	now := s.now()
	s.used.Store(now.UnixNano())
	var ends uint64
	if s.fresh > 0 {
		s.mu.Lock()
		e := s.entries[token]
		if e != nil && now.Before(e.expiry) && (now.Sub(e.checked) < s.fresh || s.told(e, now)) {
			b := bytes.Clone(e.data)
			s.mu.Unlock()
			return b, true, nil
		}
		ends = s.ends
		s.mu.Unlock()
	}
	s.dbFinds.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, expiry, found, err := s.find(ctx, token)
	if err != nil || s.fresh == 0 {
		return b, found, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !found {
		delete(s.entries, token)
		return nil, false, nil
	}
	s.put(token, &sessionEntry{data: bytes.Clone(b), expiry: expiry, checked: now, announced: s.announced(now, ends)}, now)
	return b, true, nil
}

// told reports whether e may be trusted on announcements alone at now:
// read while listening on the current connection, with no end racing
// it, and every end committed up to sessionFresh ago heard. A logout
// elsewhere is then refused here within sessionFresh, as after a read.
// Called with mu held.
func (s *sessionStore) told(e *sessionEntry, now time.Time) bool {
	return s.listening && e.announced && !e.checked.Before(s.since) && now.Sub(s.heard) < s.fresh &&
		now.Sub(e.checked) < sessionTrusted
}

// announced reports whether a read or write that began at start, when
// ends announcements had been applied, will hear of any later end of its
// session. Called with mu held.
func (s *sessionStore) announced(start time.Time, ends uint64) bool {
	return s.listening && !start.Before(s.since) && s.ends == ends
}

// listeningFrom records that the listener began listening at t.
func (s *sessionStore) listeningFrom(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listening, s.since, s.heard = true, t, t
}

// stopListening records that nobody listens: no copy is trusted on
// announcements until the listener is back and the copy read again.
func (s *sessionStore) stopListening() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listening = false
}

// heardThrough records that every end committed before t was heard.
func (s *sessionStore) heardThrough(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.After(s.heard) {
		s.heard = t
	}
}

// ended forgets the sessions stored under tokens (announced ends).
func (s *sessionStore) ended(tokens []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ends++
	for _, t := range tokens {
		delete(s.entries, t)
	}
}

// Commit stores a session's data until expiry.
func (s *sessionStore) Commit(token string, b []byte, expiry time.Time) error {
	now := s.now()
	if s.fresh > 0 {
		s.mu.Lock()
		e := s.entries[token]
		if e != nil && bytes.Equal(e.data, b) {
			ahead := expiry.Sub(e.expiry)
			if ahead >= 0 && ahead < s.touch {
				s.mu.Unlock()
				return nil
			}
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	ends := s.ends // an end applied while writing makes the copy untrusted
	s.mu.Unlock()
	s.dbCommits.Add(1)
	if err := s.db.Commit(token, b, expiry); err != nil {
		return err
	}
	s.maybeCleanup(now)
	if s.fresh == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(token, &sessionEntry{data: bytes.Clone(b), expiry: expiry, checked: now, announced: s.announced(now, ends)}, now)
	return nil
}

// current reports whether a commit of data unchanged since it was loaded,
// expiring at expiry, would be skipped (see Commit): then the caller need
// not even encode it. token is the stored (hashed) token.
func (s *sessionStore) current(token string, expiry time.Time) bool {
	if s.fresh == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[token]
	if e == nil {
		return false
	}
	ahead := expiry.Sub(e.expiry)
	return ahead >= 0 && ahead < s.touch
}

// Delete removes a session: from this process first, then from Postgres.
func (s *sessionStore) Delete(token string) error {
	s.mu.Lock()
	delete(s.entries, token)
	s.mu.Unlock()
	return s.db.Delete(token)
}

// put adds an entry. Once a minute, and whenever the cache is full, it
// first drops entries that are expired or were not used for a while.
// Called with mu held.
func (s *sessionStore) put(token string, e *sessionEntry, now time.Time) {
	full := len(s.entries) >= sessionCacheMax
	if full || now.Sub(s.lastSweep) >= time.Minute {
		s.lastSweep = now
		idle := sessionCacheIdle
		if full {
			idle = s.fresh
		}
		for k, x := range s.entries {
			if now.Sub(x.checked) >= idle || now.After(x.expiry) {
				delete(s.entries, k)
			}
		}
		if len(s.entries) >= sessionCacheMax {
			clear(s.entries) // only costs extra reads
		}
	}
	s.entries[token] = e
}

// maybeCleanup deletes expired rows at most every sessionCleanupEvery, on
// the back of a write (so no goroutine outlives the server).
func (s *sessionStore) maybeCleanup(now time.Time) {
	s.mu.Lock()
	due := now.Sub(s.lastCleanup) >= sessionCleanupEvery
	if due {
		s.lastCleanup = now
	}
	s.mu.Unlock()
	if !due || s.cleanup == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := s.cleanup(ctx)
	if err != nil {
		s.log.Warn("delete expired sessions", "err", err)
	} else if n > 0 {
		s.log.Info("deleted expired sessions", "count", n)
	}
}

// jsonCodec encodes sessions as JSON. Unlike gob it is deterministic, which
// lets sessionStore see that a commit changed nothing but the expiry; the
// price is that values must be strings (numbers would come back float64).
//
// Every request decodes its session, and a session's bytes change about
// once a minute (its stored expiry): decoded sessions are kept by their
// bytes, so a request copies six strings instead of parsing JSON (~6 % of
// a hold's CPU).
type jsonCodec struct {
	mu      sync.Mutex
	decoded map[string]sessionJSON
}

// decodedMax bounds the decoded sessions kept; past it they are dropped
// all at once (a drop costs one parse per session).
const decodedMax = 10_000

func newJSONCodec() *jsonCodec { return &jsonCodec{decoded: map[string]sessionJSON{}} }

type sessionJSON struct {
	Deadline time.Time         `json:"deadline"`
	Values   map[string]string `json:"values"`
}

func (*jsonCodec) Encode(deadline time.Time, values map[string]any) ([]byte, error) {
	out := sessionJSON{Deadline: deadline.UTC(), Values: make(map[string]string, len(values))}
	for k, v := range values {
		str, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("session value %q is a %T; only strings are stored", k, v)
		}
		out.Values[k] = str
	}
	return json.Marshal(out)
}

func (c *jsonCodec) Decode(b []byte) (time.Time, map[string]any, error) {
	c.mu.Lock()
	in, ok := c.decoded[string(b)]
	c.mu.Unlock()
	if !ok {
		if err := json.Unmarshal(b, &in); err != nil {
			return time.Time{}, nil, err
		}
		c.mu.Lock()
		if len(c.decoded) >= decodedMax {
			clear(c.decoded)
		}
		c.decoded[string(b)] = in
		c.mu.Unlock()
	}
	// A fresh map every time: scs changes the one it is given.
	values := make(map[string]any, len(in.Values))
	for k, v := range in.Values {
		values[k] = v
	}
	return in.Deadline, values, nil
}

// --- middleware ---

type actorKey struct{}

// actorFrom returns the signed-in user of the request, built from the
// server session only.
func actorFrom(ctx context.Context) (hold.Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(hold.Actor)
	return a, ok
}

// sessionActor reads the actor stored at login.
func (s *Server) sessionActor(ctx context.Context) (hold.Actor, bool) {
	org, err1 := uuid.Parse(s.sessions.GetString(ctx, sessOrg))
	user, err2 := uuid.Parse(s.sessions.GetString(ctx, sessUser))
	role := hold.Role(s.sessions.GetString(ctx, sessRole))
	if err1 != nil || err2 != nil || roleBit(role) == 0 {
		return hold.Actor{}, false
	}
	return hold.Actor{Org: org, User: user, Role: role}, true
}

type commitKey struct{}

// sessionCommit saves the session at most once per request: explicitly by
// handlers that must know it worked (login, logout), else before the first
// byte of the response.
type sessionCommit struct {
	s      *Server
	r      *http.Request
	token  string            // from the request's cookie
	loaded map[string]string // the values loaded with it; nil for no session
	once   sync.Once
	err    error
}

func (c *sessionCommit) commit(w http.ResponseWriter) error {
	c.once.Do(func() {
		ctx := c.r.Context()
		switch c.s.sessions.Status(ctx) {
		case scs.Modified:
			if c.unchanged(ctx) {
				return
			}
			token, expiry, err := c.s.sessions.Commit(ctx)
			if err != nil {
				c.err = fmt.Errorf("commit session: %w", err)
				return
			}
			c.s.sessions.WriteSessionCookie(ctx, w, token, expiry)
		case scs.Destroyed:
			c.s.sessions.WriteSessionCookie(ctx, w, "", time.Time{})
		}
	})
	return c.err
}

// unchanged reports whether the session may be left as it is: scs marks
// every loaded session modified when there is an idle timeout, so that
// its expiry moves on, and would encode it and set the cookie again on
// every request; but the store writes the new expiry at most every touch,
// so while the values are those loaded and the stored expiry is recent
// enough, saving would change nothing but the cookie's expiry (which then
// lags the stored one by less than touch).
func (c *sessionCommit) unchanged(ctx context.Context) bool {
	sm := c.s.sessions
	if c.loaded == nil || sm.Token(ctx) != c.token {
		return false // a new session, or a renewed token
	}
	keys := sm.Keys(ctx)
	if len(keys) != len(c.loaded) {
		return false
	}
	for _, k := range keys {
		v, ok := sm.Get(ctx, k).(string)
		if was, found := c.loaded[k]; !ok || !found || v != was {
			return false
		}
	}
	expiry := sm.Deadline(ctx)
	if idle := time.Now().Add(sm.IdleTimeout).UTC(); sm.IdleTimeout > 0 && idle.Before(expiry) {
		expiry = idle
	}
	return c.s.sstore.current(storedToken(c.token), expiry)
}

// storedToken is the token as scs hands it to the store
// (HashTokenInStore).
func storedToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// saveSession commits the session now, so a handler can fail cleanly if it
// cannot be saved.
func (s *Server) saveSession(w http.ResponseWriter, r *http.Request) error {
	c, ok := r.Context().Value(commitKey{}).(*sessionCommit)
	if !ok {
		return errors.New("saveSession: no session middleware")
	}
	return c.commit(w)
}

// withSession loads the session (scs), puts the actor it names in the
// context, and saves the session before the response is written. It is
// scs's LoadAndSave with a writer that keeps Flush and Hijack working.
func (s *Server) withSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Cookie")
		if key, ok := bearerKey(r); ok {
			s.withAPIKey(w, r, key, next)
			return
		}
		var token string
		if c, err := r.Cookie(s.sessions.Cookie.Name); err == nil {
			token = c.Value
		}
		ctx, err := s.sessions.Load(r.Context(), token)
		if err != nil {
			s.log.ErrorContext(r.Context(), "load session", "err", err)
			s.writeError(w, r, unavailable("sessions are unavailable right now; please try again"))
			return
		}
		if a, ok := s.sessionActor(ctx); ok {
			ctx = context.WithValue(ctx, actorKey{}, a)
			if info := infoOf(ctx); info != nil {
				info.org = a.Org
			}
		}
		c := &sessionCommit{s: s, token: token}
		if token != "" && s.sessions.Token(ctx) == token {
			// What was loaded, to tell at the end whether anything changed.
			keys := s.sessions.Keys(ctx)
			c.loaded = make(map[string]string, len(keys))
			for _, k := range keys {
				c.loaded[k] = s.sessions.GetString(ctx, k)
			}
		}
		ctx = context.WithValue(ctx, commitKey{}, c)
		c.r = r.WithContext(ctx)
		sw := &sessionWriter{ResponseWriter: w, c: c, s: s}
		next.ServeHTTP(sw, c.r)
		sw.save()
	})
}

// sessionWriter saves the session before the header goes out.
type sessionWriter struct {
	http.ResponseWriter
	c *sessionCommit
	s *Server
}

func (w *sessionWriter) save() {
	if err := w.c.commit(w.ResponseWriter); err != nil {
		// Too late to change the answer; the session keeps its old state.
		w.s.log.ErrorContext(w.c.r.Context(), "save session", "err", err)
	}
}

func (w *sessionWriter) WriteHeader(code int) {
	w.save()
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionWriter) Write(b []byte) (int, error) {
	w.save()
	return w.ResponseWriter.Write(b)
}

func (w *sessionWriter) Flush() {
	w.save()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection over (WebSocket upgrades). The session is
// saved first; its cookie cannot be sent any more.
func (w *sessionWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.save()
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
