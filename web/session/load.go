package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/web/httpx"
)

type actorKey struct{}

// ActorFrom returns the signed-in user of the request, built from the
// server session or the API key only, never from the request.
func ActorFrom(ctx context.Context) (hold.Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(hold.Actor)
	return a, ok
}

// actor reads the actor stored at sign-in.
func (s *Sessions) actor(ctx context.Context) (hold.Actor, bool) {
	org, err1 := uuid.Parse(s.sm.GetString(ctx, sessOrg))
	user, err2 := uuid.Parse(s.sm.GetString(ctx, sessUser))
	role := hold.Role(s.sm.GetString(ctx, sessRole))
	if err1 != nil || err2 != nil || roleBit(role) == 0 {
		return hold.Actor{}, false
	}
	a := hold.Actor{Org: org, User: user, Role: role}
	// A new account's holds are capped lower until it is old enough.
	if role == hold.RoleBuyer && s.newAccount(ctx, time.Now()) {
		a.HoldCap = s.newCap
	}
	return a, true
}

// newAccount tells whether the session's account is younger than
// Options.NewAccountAge at now.
func (s *Sessions) newAccount(ctx context.Context, now time.Time) bool {
	if s.newAge <= 0 || s.newCap <= 0 {
		return false
	}
	if created, err := strconv.ParseInt(s.sm.GetString(ctx, sessCreated), 10, 64); err == nil {
		return now.Before(time.Unix(created, 0).Add(s.newAge))
	}
	until, err := strconv.ParseInt(s.sm.GetString(ctx, sessNewUntil), 10, 64)
	return err == nil && now.Unix() < until
}

// Load loads the request's session (scs), puts the actor it names in the
// context, and saves the session before the response is written; a
// request with an API key acts as the key instead. It is scs's
// LoadAndSave with a writer that keeps Flush and Hijack working.
func (s *Sessions) Load(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Cookie")
		if key, ok := BearerKey(r); ok {
			s.withAPIKey(w, r, key, next)
			return
		}
		var token string
		if c, err := r.Cookie(s.sm.Cookie.Name); err == nil {
			token = c.Value
		}
		ctx, err := s.sm.Load(r.Context(), token)
		if err != nil {
			s.log.ErrorContext(r.Context(), "load session", "err", err)
			s.errs.Write(w, r, apperr.E(apperr.Unavailable, "sessions are unavailable right now; please try again"))
			return
		}
		if a, ok := s.actor(ctx); ok {
			ctx = context.WithValue(ctx, actorKey{}, a)
			httpx.NoteOrg(ctx, a.Org)
			s.touch(r.WithContext(ctx), storedToken(token))
		}
		c := &sessionCommit{s: s, token: token}
		if token != "" && s.sm.Token(ctx) == token {
			// What was loaded, to tell at the end whether anything changed.
			keys := s.sm.Keys(ctx)
			c.loaded = make(map[string]string, len(keys))
			for _, k := range keys {
				c.loaded[k] = s.sm.GetString(ctx, k)
			}
		}
		ctx = context.WithValue(ctx, commitKey{}, c)
		c.r = r.WithContext(ctx)
		sw := &sessionWriter{ResponseWriter: w, c: c, s: s}
		next.ServeHTTP(sw, c.r)
		sw.save()
	})
}

// API keys: organizers create keys; a request under /api/ with
// "Authorization: Bearer <key>" acts with the key's organization and role,
// exactly as a session would. Such a request carries no ambient browser
// credential (a browser never adds the header by itself, and a
// cross-origin page cannot without a preflight this server never
// approves), so it needs no cross-site protection; in exchange it never
// looks at the session cookie.

type apiKeyCtx struct{}

// BearerKey returns the API key of a request under /api/, if it has one.
func BearerKey(r *http.Request) (string, bool) {
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		return "", false
	}
	h := r.Header.Get("Authorization")
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(key), true
}

// APIKeyFrom returns the API key a request authenticated with.
func APIKeyFrom(ctx context.Context) (store.APIKey, bool) {
	k, ok := ctx.Value(apiKeyCtx{}).(store.APIKey)
	return k, ok
}

// withAPIKey authenticates a bearer request: 401 for a key that is not
// valid, 429 past the key's rate limit. The session is loaded empty (so
// handlers that read it see nothing) and never saved.
func (s *Sessions) withAPIKey(w http.ResponseWriter, r *http.Request, secret string, next http.Handler) {
	key, err := s.keys.Authenticate(r.Context(), secret)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="seatd"`)
		s.errs.Write(w, r, err)
		return
	}
	if err := s.keyLimit.APIKey(r.Context(), key.OrgID, key.ID); err != nil {
		s.errs.Write(w, r, err)
		return
	}
	ctx, err := s.sm.Load(r.Context(), "")
	if err != nil {
		s.errs.Write(w, r, err)
		return
	}
	a := hold.Actor{Org: key.OrgID, User: key.CreatedBy, Role: hold.Role(key.Role)}
	ctx = context.WithValue(ctx, actorKey{}, a)
	ctx = context.WithValue(ctx, apiKeyCtx{}, key)
	httpx.NoteOrg(ctx, a.Org)
	next.ServeHTTP(w, r.WithContext(ctx))
}

type commitKey struct{}

// sessionCommit saves the session at most once per request: explicitly by
// handlers that must know it worked (sign-in, sign-out), else before the
// first byte of the response.
type sessionCommit struct {
	s      *Sessions
	r      *http.Request
	token  string            // from the request's cookie
	loaded map[string]string // the values loaded with it; nil for no session
	once   sync.Once
	err    error
}

func (c *sessionCommit) commit(w http.ResponseWriter) error {
	c.once.Do(func() {
		ctx := c.r.Context()
		switch c.s.sm.Status(ctx) {
		case scs.Modified:
			if c.unchanged(ctx) {
				return
			}
			token, _, err := c.s.sm.Commit(ctx)
			if err != nil {
				c.err = fmt.Errorf("commit session: %w", err)
				return
			}
			c.s.writeCookie(ctx, w, token)
		case scs.Destroyed:
			c.s.writeCookie(ctx, w, "")
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
	sm := c.s.sm
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
	return c.s.store.current(storedToken(c.token), c.s.expiry(ctx))
}

// expiry is when the request's session expires if saved now: a
// remembered session at its deadline, any other at the earlier of its
// deadline and its idle deadline.
func (s *Sessions) expiry(ctx context.Context) time.Time {
	sm := s.sm
	expiry := sm.Deadline(ctx)
	if sm.GetString(ctx, sessRemember) == "1" {
		return expiry
	}
	if idle := time.Now().Add(sm.IdleTimeout).UTC(); sm.IdleTimeout > 0 && idle.Before(expiry) {
		expiry = idle
	}
	return expiry
}

// writeCookie sets the session cookie: persistent until the deadline for
// a remembered session, one that ends with the browser for any other,
// expired for an ended one (token "").
func (s *Sessions) writeCookie(ctx context.Context, w http.ResponseWriter, token string) {
	sm := s.sm
	// #nosec G124 -- Secure follows COOKIE_SECURE (production requires it); HttpOnly and SameSite=Lax are set in New.
	c := &http.Cookie{Name: sm.Cookie.Name, Value: token, Path: sm.Cookie.Path, Domain: sm.Cookie.Domain,
		HttpOnly: sm.Cookie.HttpOnly, Secure: sm.Cookie.Secure, SameSite: sm.Cookie.SameSite}
	switch {
	case token == "":
		c.Expires, c.MaxAge = time.Unix(1, 0), -1
	case sm.GetString(ctx, sessRemember) == "1":
		until := sm.Deadline(ctx)
		c.Expires = time.Unix(until.Unix()+1, 0)
		c.MaxAge = int(time.Until(until).Seconds() + 1)
	}
	w.Header().Add("Set-Cookie", c.String())
	w.Header().Add("Cache-Control", `no-cache="Set-Cookie"`)
}

// save commits the session now, so a handler can fail cleanly if it
// cannot be saved.
func (s *Sessions) save(w http.ResponseWriter, r *http.Request) error {
	c, ok := r.Context().Value(commitKey{}).(*sessionCommit)
	if !ok {
		return errors.New("session: the request did not pass Load")
	}
	return c.commit(w)
}

// sessionWriter saves the session before the header goes out.
type sessionWriter struct {
	http.ResponseWriter
	c *sessionCommit
	s *Sessions
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
