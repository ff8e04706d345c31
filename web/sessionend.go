package web

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"seatd/internal/auth"
	"seatd/web/live"
)

// Sessions end everywhere at once: a logout, a disabled account or a role
// change is published on the bus (auth.SessionEnds), and every process
// forgets its cached copy of the session and closes its sockets with
// live.CodeSessionEnded. Expiry and idle timeouts need no message: every
// socket carries its session's deadline and asks the store when it comes
// (live.Options.SessionExpiry).

// listenSessionEnds subscribes this server to the session-end channel.
// When the subscription had to be re-established, messages may have been
// lost, so every socket checks its session in the store.
func (s *Server) listenSessionEnds() {
	s.ends = auth.NewSessionEnds(s.deps.Bus, s.deps.Cfg.KeyPrefix)
	s.unlisten = s.ends.Subscribe(s.sessionEnded, s.hub.RecheckSessions)
}

// sessionEnded applies a published session end in this process.
func (s *Server) sessionEnded(e auth.SessionEnd) {
	if e.Token != "" {
		s.sstore.forget(e.Token)
		s.hub.CloseSession(e.Token)
	}
	if e.User != uuid.Nil {
		s.sstore.forgetUser(e.Org, e.User)
		s.hub.CloseUser(e.Org, e.User)
	}
}

// endSession announces that the session stored under token ended.
// Failing to publish is logged, not returned: the session is gone from
// Postgres already, so other processes refuse it within sessionFresh, and
// its sockets there close at their next session check.
func (s *Server) endSession(ctx context.Context, token, reason string) {
	if err := s.ends.Publish(context.WithoutCancel(ctx), auth.SessionEnd{Token: token, Reason: reason}); err != nil {
		s.log.WarnContext(ctx, "announce session end", "reason", reason, "err", err)
	}
}

// liveOptions are the hub's settings: socket caps and the session check.
func (s *Server) liveOptions() live.Options {
	cfg := s.deps.Cfg
	return live.Options{
		MaxClients:    cfg.MaxSockets,
		MaxPerSession: cfg.MaxSocketsPerSession,
		SessionExpiry: s.deps.Store.SessionExpiry,
	}
}

// sessionDeadline is the earliest the request's session may expire: its
// absolute deadline, its idle deadline from now, or the expiry the store
// holds (which lags the idle deadline by up to the store's touch
// interval). A socket checks the store when it comes, so an earlier guess
// only costs a read.
func (s *Server) sessionDeadline(ctx context.Context) time.Time {
	sm := s.sessions
	d := sm.Deadline(ctx)
	if sm.IdleTimeout > 0 {
		if idle := time.Now().Add(sm.IdleTimeout); idle.Before(d) {
			d = idle
		}
	}
	if exp, ok := s.sstore.storedExpiry(storedToken(sm.Token(ctx))); ok && exp.Before(d) {
		d = exp
	}
	return d
}

// forget drops a session from this process's cache, so its next use asks
// Postgres.
func (s *sessionStore) forget(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, token)
}

// forgetUser drops every cached session of a user.
func (s *sessionStore) forgetUser(org, user uuid.UUID) {
	o, u := org.String(), user.String()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.entries {
		if !bytes.Contains(e.data, []byte(u)) {
			continue
		}
		var in sessionJSON
		if json.Unmarshal(e.data, &in) == nil && in.Values[sessOrg] == o && in.Values[sessUser] == u {
			delete(s.entries, k)
		}
	}
}

// storedExpiry is the expiry of a cached session as stored in Postgres.
func (s *sessionStore) storedExpiry(token string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[token]
	if e == nil || e.expiry.IsZero() {
		return time.Time{}, false
	}
	return e.expiry, true
}
