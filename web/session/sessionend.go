package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Sessions end everywhere at once. The statement that ends a session —
// a logout, a disabled account, a role change (every session of the user
// is deleted), the expiry cleanup — announces it on the seatd_sessions
// channel in its own transaction (migrations 018 and 019's trigger), so
// no end can commit unannounced. Every process listens (through its
// notifier): it forgets its cached copy and closes the session's sockets
// with live.CodeSessionEnded. A change of a session's data (a flash
// message) is announced too, apart: copies are forgotten, sockets stay
// open. Expiry and idle timeouts need no message: every socket carries
// its session's deadline and asks the store when it comes
// (live.Options.SessionExpiry).
//
// While the cache is in use, the listener also proves, four times a second,
// that it hears every end: it announces a heartbeat of its own on the
// channel and notes when it sent it. Postgres delivers notifications in
// commit order, and the notifier hands them to the listener in that
// order, so once the heartbeat sent at t arrives, every end committed
// before t has arrived too. While that proof is recent, the session cache
// keeps what it read until an end is announced for it (sessionStore.told)
// instead of asking Postgres again every second. Ends committed while the
// notifier was not listening are not heard: after each (re)connect every
// socket checks its session in the store, and the cache trusts only what
// it reads from then on (sessionStore.listeningFrom). While it is cut off,
// no heartbeat comes back, so the proof ages past sessionFresh.

// sessionsChannel is the trigger's channel.
const sessionsChannel = "seatd_sessions"

// Heartbeat settings.
const (
	// heartbeatEvery is how often the listener proves it hears the
	// channel; the cache trusts the proof for sessionFresh.
	heartbeatEvery = 250 * time.Millisecond
	// heartbeatsKept bounds the heartbeats in flight remembered.
	heartbeatsKept = 64
)

// sessionEnds listens for announced session ends (see above).
type sessionEnds struct {
	pool     *pgxpool.Pool
	notifier Notifier
	store    *sessionStore
	hub      Hub
	log      *slog.Logger
	// id tells this process's heartbeats from other processes'.
	id string

	mu   sync.Mutex
	seq  uint64
	sent map[uint64]time.Time // heartbeats sent and not heard yet
}

func newSessionEnds(pool *pgxpool.Pool, n Notifier, st *sessionStore, hub Hub, log *slog.Logger) *sessionEnds {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &sessionEnds{pool: pool, notifier: n, store: st, hub: hub, log: log,
		id: hex.EncodeToString(b[:]), sent: map[uint64]time.Time{}}
}

// run listens until ctx ends (Sessions.Run).
func (l *sessionEnds) run(ctx context.Context) {
	unlisten := l.notifier.Listen(sessionsChannel, l.heard)
	// Registered after Listen: it runs once the channel is LISTENed.
	unready := l.notifier.OnReady(l.ready)
	defer func() {
		unready()
		unlisten()
		l.store.stopListening()
	}()
	l.beat(ctx)
}

// ready runs when the notifier LISTENs to the channel, after every
// (re)connect: ends committed before were not heard.
func (l *sessionEnds) ready() {
	l.store.listeningFrom(l.store.now())
	l.hub.RecheckSessions()
}

// beat sends a heartbeat every heartbeatEvery until ctx ends, while the
// cache was used in the last two sessionFresh: every listener wakes for
// every heartbeat, so idle processes send none. A heartbeat that fails, or
// is sent while the notifier is not listening, is simply not heard: the
// proof ages, and past sessionFresh the cache asks Postgres again.
func (l *sessionEnds) beat(ctx context.Context) {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if l.store.now().Sub(time.Unix(0, l.store.used.Load())) > 2*sessionFresh {
			continue
		}
		l.mu.Lock()
		l.seq++
		seq := l.seq
		l.sent[seq] = l.store.now()
		if len(l.sent) > heartbeatsKept {
			delete(l.sent, seq-heartbeatsKept)
		}
		l.mu.Unlock()
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		_, _ = l.pool.Exec(hctx, "SELECT pg_notify($1, $2)", sessionsChannel, "."+l.id+" "+strconv.FormatUint(seq, 10))
		cancel()
	}
}

// heard applies one notification: a heartbeat (".id seq"), stored tokens
// of sessions whose data changed ("~" and the tokens: cached copies are
// dropped, sockets stay) or of ended sessions. Tokens are base64url and
// never start with either mark.
func (l *sessionEnds) heard(payload string) {
	if hb, ok := strings.CutPrefix(payload, "."); ok {
		id, n, _ := strings.Cut(hb, " ")
		seq, err := strconv.ParseUint(n, 10, 64)
		if id != l.id || err != nil {
			return // another process's
		}
		l.mu.Lock()
		at, ok := l.sent[seq]
		for k := range l.sent {
			if k <= seq {
				delete(l.sent, k)
			}
		}
		l.mu.Unlock()
		if ok {
			l.store.heardThrough(at)
		}
		return
	}
	changed, isChange := strings.CutPrefix(payload, "~")
	tokens := strings.Fields(changed)
	l.store.ended(tokens)
	if isChange {
		return
	}
	for _, t := range tokens {
		l.hub.CloseSession(t)
	}
}

// Deadline is the earliest the request's session may expire: its
// absolute deadline, its idle deadline from now, or the expiry the store
// holds (which lags the idle deadline by up to the store's touch
// interval). A socket checks the store when it comes, so an earlier guess
// only costs a read.
func (s *Sessions) Deadline(ctx context.Context) time.Time {
	sm := s.sm
	d := s.expiry(ctx)
	if exp, ok := s.store.storedExpiry(storedToken(sm.Token(ctx))); ok && exp.Before(d) {
		d = exp
	}
	return d
}

// storedExpiry is the expiry of a cached session as stored in Postgres.
func (s *sessionStore) storedExpiry(token string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[token]
	if e == nil {
		return time.Time{}, false
	}
	return e.expiry, true
}
