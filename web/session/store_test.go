package session

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"
)

// memStore is an scs store counting its calls, with the expiry read that
// sessionStore.find does, on the test's clock.
type memStore struct {
	mu      sync.Mutex
	now     func() time.Time
	data    map[string]memRow
	finds   int
	commits int
	// during, if set, runs inside the next findSession, as a change
	// committed while the read is in flight would.
	during func()
}

type memRow struct {
	b      []byte
	expiry time.Time
}

func (m *memStore) Find(token string) ([]byte, bool, error) {
	b, _, ok, err := m.findSession(context.Background(), token)
	return b, ok, err
}

func (m *memStore) findSession(_ context.Context, token string) ([]byte, time.Time, bool, error) {
	m.mu.Lock()
	m.finds++
	r, ok := m.data[token]
	during := m.during
	m.during = nil
	m.mu.Unlock()
	if during != nil {
		during()
	}
	if !ok || !m.now().Before(r.expiry) {
		return nil, time.Time{}, false, nil
	}
	return r.b, r.expiry, true, nil
}

func (m *memStore) Commit(token string, b []byte, expiry time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits++
	m.data[token] = memRow{b, expiry}
	return nil
}

// refresh is store.Devices.Touch's expiry update: only a stored row
// moves, and only forward (written at once here; touches queues it).
func (m *memStore) refresh(token string, expiry time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits++
	if r, ok := m.data[token]; ok && r.expiry.Before(expiry) {
		r.expiry = expiry
		m.data[token] = r
	}
}

func (m *memStore) Delete(token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.data, token)
	return nil
}

// newMemSessions is a session cache on a memStore and a fake clock.
func newMemSessions() (*sessionStore, *memStore, *time.Time) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	db := &memStore{data: map[string]memRow{}, now: clock}
	s := &sessionStore{db: db, find: db.findSession, refresh: db.refresh, fresh: time.Second, touch: time.Minute, now: clock,
		entries: map[string]*sessionEntry{}, lastCleanup: now}
	return s, db, &now
}

// TestSessionStoreRules pins the cache's rules on a fake clock: reads are
// trusted for `fresh`, idle refreshes are written once `touch` has passed,
// changes and deletes go through at once.
func TestSessionStoreRules(t *testing.T) {
	t.Parallel()
	s, db, clock := newMemSessions()
	idle := 2 * time.Hour
	step := func(d time.Duration) { *clock = clock.Add(d) }
	now := func() time.Time { return *clock }
	expect := func(finds, commits int) {
		t.Helper()
		if db.finds != finds || db.commits != commits {
			t.Fatalf("store calls: %d finds, %d commits; want %d, %d", db.finds, db.commits, finds, commits)
		}
	}

	if err := s.Commit("t", []byte("v1"), now().Add(idle)); err != nil { // login
		t.Fatal(err)
	}
	expect(0, 1)
	for range 10 { // requests within a second: no store call
		if b, ok, _ := s.Find("t"); !ok || string(b) != "v1" {
			t.Fatal("cached session not found")
		}
		_ = s.Commit("t", []byte("v1"), now().Add(idle))
		step(50 * time.Millisecond)
	}
	expect(0, 1)
	step(time.Second) // stale: read again, still no write (expiry moved < touch)
	_, _, _ = s.Find("t")
	_ = s.Commit("t", []byte("v1"), now().Add(idle))
	expect(1, 1)
	step(spread("t", s.touch)) // expiry moved by this session's touch: written
	_, _, _ = s.Find("t")
	_ = s.Commit("t", []byte("v1"), now().Add(idle))
	expect(2, 2)
	_ = s.Commit("t", []byte("v2"), now().Add(idle)) // data changed: written at once
	expect(2, 3)
	if err := s.Delete("t"); err != nil { // logout: refused at once, no stale read
		t.Fatal(err)
	}
	if _, ok, _ := s.Find("t"); ok {
		t.Fatal("deleted session still found")
	}
	expect(3, 3)
	// Deleted elsewhere (another process): found from cache for < fresh.
	_ = s.Commit("u", []byte("w"), now().Add(idle))
	_ = db.Delete("u")
	if _, ok, _ := s.Find("u"); !ok {
		t.Fatal("expected the cached copy within fresh")
	}
	step(time.Second)
	if _, ok, _ := s.Find("u"); ok {
		t.Fatal("session deleted elsewhere still accepted after fresh")
	}
	// Deleted elsewhere, then refreshed here before the end was heard:
	// the refresh updates, it does not bring the session back.
	_ = s.Commit("r", []byte("v"), now().Add(idle))
	_ = db.Delete("r")
	step(2 * time.Minute)
	_ = s.Commit("r", []byte("v"), now().Add(idle))
	if _, ok := db.data["r"]; ok {
		t.Fatal("an expiry refresh brought back a session deleted elsewhere")
	}
	// A session past its stored expiry is not served from the cache.
	_ = s.Commit("x", []byte("y"), now().Add(100*time.Millisecond))
	step(200 * time.Millisecond)
	_ = db.Delete("x")
	if _, ok, _ := s.Find("x"); ok {
		t.Fatal("expired session served from cache")
	}
	t.Logf("10 requests in 0.5 s: 0 store calls; refresh written after touch (%s); logout immediate; remote delete seen after fresh (%s)", s.touch, s.fresh)
}

// TestSessionStoreTrustsAnnouncements pins the rules of trusting a copy on
// announced ends (sessionEnds) on a fake clock: kept without reads while
// every end is heard within fresh, dropped when its end is announced, and
// read again every fresh when the proof is old, the listener is away or
// came back, or an end raced the read.
func TestSessionStoreTrustsAnnouncements(t *testing.T) {
	t.Parallel()
	s, db, clock := newMemSessions()
	step := func(d time.Duration) { *clock = clock.Add(d) }
	now := func() time.Time { return *clock }
	expiry := now().Add(time.Hour)
	reads := func(token string, d time.Duration, heard bool) int {
		t.Helper()
		f0 := db.finds
		for end := now().Add(d); now().Before(end); step(100 * time.Millisecond) {
			if heard {
				s.heardThrough(now().Add(-50 * time.Millisecond))
			}
			if _, ok, _ := s.Find(token); !ok {
				t.Fatalf("%s not found", token)
			}
		}
		return db.finds - f0
	}

	s.listeningFrom(now())
	_ = s.Commit("a", []byte("v"), expiry)
	if n := reads("a", 5*time.Second, true); n != 0 {
		t.Fatalf("announced copy, every end heard: %d reads in 5 s, want 0", n)
	}
	// Ended elsewhere: the announcement drops it at once.
	delete(db.data, "a")
	s.ended([]string{"a"})
	if _, ok, _ := s.Find("a"); ok {
		t.Fatal("announced end still accepted")
	}
	// The proof ages (heartbeats not heard): read again every fresh.
	_ = s.Commit("b", []byte("v"), expiry)
	if n := reads("b", 3*time.Second, false); n < 2 {
		t.Fatalf("proof older than fresh: %d reads in 3 s, want one a second", n)
	}
	// Past the trusted cap, read again even with every end heard.
	step(time.Second)
	_, _, _ = s.Find("b")
	if n := reads("b", spread("b", sessionTrusted)+time.Second, true); n != 1 {
		t.Fatalf("%d reads over %v, want 1 (the cap)", n, spread("b", sessionTrusted)+time.Second)
	}
	// An end announced while the read was in flight: that copy may
	// predate it, so it is trusted for fresh only.
	_ = db.Commit("c", []byte("v"), expiry) // written elsewhere, not cached here
	s.heardThrough(now())
	db.during = func() { s.ended([]string{"other"}) }
	_, _, _ = s.Find("c")
	if n := reads("c", 3*time.Second, true); n != 1 {
		t.Fatalf("copy read while an end was applied: %d reads in 3 s, want 1 (after fresh)", n)
	}
	// Nobody listening: copies are read every fresh.
	s.stopListening()
	if n := reads("c", 3*time.Second, false); n < 2 {
		t.Fatalf("not listening: %d reads in 3 s, want one a second", n)
	}
	// Listening again: a copy from before is not trusted until read again
	// (ends committed meanwhile were not heard); the read one is.
	_ = s.Commit("d", []byte("v"), expiry)
	step(10 * time.Millisecond)
	s.listeningFrom(now())
	if n := reads("d", 1500*time.Millisecond, true); n != 1 {
		t.Fatalf("copy from before listening: %d reads in 1.5 s, want 1", n)
	}
	if n := reads("d", 3*time.Second, true); n != 0 {
		t.Fatalf("copy read while listening: %d reads in 3 s, want 0", n)
	}
	// Never past the stored expiry, however well told.
	_ = s.Commit("e", []byte("v"), now().Add(300*time.Millisecond))
	step(400 * time.Millisecond)
	s.heardThrough(now())
	if _, ok, _ := s.Find("e"); ok {
		t.Fatal("expired session served from an announced copy")
	}
	t.Logf("announced copies: 0 reads in 5 s while heard; re-read each %v when the proof ages, the listener is away or an end raced the read; at most every %v otherwise",
		s.fresh, sessionTrusted)
}

// TestSessionStoreHoldsABigLine: 100 000 visitors waiting in a room,
// with the event's buyers beside them, all stay cached while they poll
// (every 5 to 30 s), so a poll reads no session from Postgres.
func TestSessionStoreHoldsABigLine(t *testing.T) {
	t.Parallel()
	s, db, clock := newMemSessions()
	s.listeningFrom(*clock)
	const n = 110_000
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = strconv.Itoa(i)
		if err := s.Commit(tokens[i], []byte("v"), clock.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	*clock = clock.Add(20 * time.Second)
	s.heardThrough(*clock)
	for _, tok := range tokens {
		if _, ok, err := s.Find(tok); !ok || err != nil {
			t.Fatalf("session %s: %v %v", tok, ok, err)
		}
	}
	if db.finds != 0 {
		t.Fatalf("%d of %d polls read Postgres", db.finds, n)
	}
}

// TestSeenKeepsRecentWritesWhenFull: with seenMax sessions remembered, a
// new one makes room by forgetting the entries whose write is due anyway,
// not every entry: a session written a moment ago is not written again
// (when all were forgotten, every session of a full waiting room cost a
// write a request).
func TestSeenKeepsRecentWritesWhenFull(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s := seen{last: map[string]time.Time{}}
	for i := range seenMax {
		at := now.Add(-2 * seenEvery) // due again
		if i%2 == 0 {
			at = now.Add(-time.Second) // written a second ago
		}
		s.last[strconv.Itoa(i)] = at
	}
	if !s.due("new", now) {
		t.Fatal("a session never written is not due")
	}
	if s.due("0", now) {
		t.Fatal("a session written a second ago is due again once the map was full")
	}
	if !s.due("1", now) {
		t.Fatal("a session written two minutes ago is not due")
	}
	if got, want := len(s.last), seenMax/2+2; got != want {
		t.Fatalf("%d remembered, want %d (the recent half, the new one and the one due)", got, want)
	}
}
