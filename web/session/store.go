package session

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alexedwards/scs/v2"
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
	// before Postgres is asked again. Every change of a session's data
	// and every end is announced, so the cap only bounds the harm of a
	// fault nobody foresaw; a crowd polling every half minute (a waiting
	// room) costs a read per session every sessionTrusted.
	sessionTrusted = 5 * time.Minute
	// sessionTouchMax caps how far a session's stored expiry may lag behind
	// its idle deadline before the refresh is written to Postgres (each
	// session's, spread by up to a half): the idle timeout (two hours by
	// default) is enforced to within that, and a crowd of sessions costs
	// a row update each per period.
	sessionTouchMax = 5 * time.Minute
	// sessionCacheMax bounds the cache; beyond it, idle entries are dropped.
	// It is twice a waiting room of 100 000 visitors polling one process
	// (about 1 KiB each, docs/waiting-room.md): at the bound, the cache
	// keeps only what was used within sessionFresh, so each poll would
	// read Postgres again.
	sessionCacheMax = 200_000
	// sessionCacheIdle is how long an entry stays cached after it was
	// last read or written in Postgres. Losing it only costs a read and a
	// write the next time the session is used. It outlasts the longest
	// trusted period (spread sessionTrusted), so a copy in use is read
	// again on its own period, not dropped by a sweep with every copy
	// read at the same time.
	sessionCacheIdle = 10 * time.Minute
	// sessionCleanupEvery is how often expired rows are deleted.
	sessionCleanupEvery = 10 * time.Minute
)

// sessionStore is the scs store: Postgres (pgxstore) behind a small
// per-process cache. Without it every authenticated request costs a
// SELECT and, because of the idle timeout, an UPSERT of the session row.
//
//   - Find answers from the cache while the entry is younger than fresh,
//     or while it is told of every end (told), otherwise asks Postgres;
//     never past the entry's stored expiry.
//   - Commit skips the write when the data is unchanged and the new expiry
//     is less than the session's touch period (touch, spread by up to a
//     half) past the stored one: the idle timeout is then enforced to
//     within that period and a second (a session idle for IdleTimeout less
//     the period may already be gone), never beyond it. Past it, unchanged
//     data costs only an update of its expiry, queued and written with
//     other sessions' within a second (refresh, touches).
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
	// refresh queues a later expiry of a session whose data did not
	// change (an update, written within a second with other sessions':
	// touches); nil without the cache, where every write is scs's upsert.
	refresh func(token string, expiry time.Time)

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

	// remembered reads a session's data: a remembered session is stored
	// until its deadline, whatever the idle timeout scs applied.
	remembered func(b []byte) (deadline time.Time, ok bool)

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
		if e != nil && now.Before(e.expiry) && (now.Sub(e.checked) < s.fresh || s.told(token, e, now)) {
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
func (s *sessionStore) told(token string, e *sessionEntry, now time.Time) bool {
	return s.listening && e.announced && !e.checked.Before(s.since) && now.Sub(s.heard) < s.fresh &&
		now.Sub(e.checked) < spread(token, sessionTrusted)
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
	if s.remembered != nil {
		if deadline, ok := s.remembered(b); ok {
			expiry = deadline
		}
	}
	if s.fresh > 0 {
		s.mu.Lock()
		e := s.entries[token]
		if e != nil && bytes.Equal(e.data, b) {
			ahead := expiry.Sub(e.expiry)
			if ahead >= 0 && ahead < spread(token, s.touch) {
				s.mu.Unlock()
				return nil
			}
			if ahead > 0 && s.refresh != nil {
				// Only the expiry moves. An update, not scs's upsert: a
				// session ended elsewhere meanwhile is not brought back.
				// Queued: the copy here counts it written at once, so the
				// stored expiry trails this one by at most touchEvery.
				e.expiry = expiry
				s.mu.Unlock()
				s.dbCommits.Add(1)
				s.refresh(token, expiry)
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
	return ahead >= 0 && ahead < spread(token, s.touch)
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
