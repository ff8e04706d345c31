package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"seatd/internal/waitroom"
)

// Room is an event's waiting room with many visitors in line on one
// process (docs/waiting-room.md): what they cost the server, how fast it
// answers their polls, how exactly it lets them through, and whether the
// holds of admitted buyers slow down while they wait.
type Room struct {
	Visitors      int `json:"visitors"`
	RatePerMinute int `json:"rate_per_minute"`
	// Cold: every visitor joins before the opening (POST .../queue), each
	// a session the process reads from Postgres for the first time; a
	// closed loop of JoinConns connections, each join timed from its own
	// start (no correction for coordinated omission).
	JoinConns  int     `json:"join_connections"`
	Join       Latency `json:"join"`
	JoinPerSec float64 `json:"joins_per_s"`
	// Memory of the process (heap in use and RSS, after a forced GC)
	// before anyone joined, after everyone joined (cold), and after the
	// polling window (steady); per visitor in bytes.
	HeapBeforeMiB         float64 `json:"heap_before_mib"`
	HeapPerVisitorJoined  float64 `json:"heap_per_visitor_joined_bytes"`
	RSSPerVisitorJoined   float64 `json:"rss_per_visitor_joined_bytes"`
	HeapPerVisitorPolling float64 `json:"heap_per_visitor_polling_bytes"`
	RSSPerVisitorPolling  float64 `json:"rss_per_visitor_polling_bytes"`
	// Steady: after the opening every visitor polls POST .../queue as
	// the waiting page does (static/js/queue.js), when its last answer
	// said (poll_after_seconds, spread ±10 % as the page does), the first
	// polls spread over PollSpread; an open loop over PollConns
	// connections. Poll is timed from each poll's due time (corrected for
	// coordinated omission), PollSent from its sending.
	PollConns    int            `json:"poll_connections"`
	PollSeconds  float64        `json:"poll_seconds"`
	PollSpread   float64        `json:"poll_spread_seconds"`
	Polls        int            `json:"polls"`
	PollPerSec   float64        `json:"polls_per_s"`
	PollNotSent  int            `json:"polls_not_sent"`
	Poll         Latency        `json:"poll"`
	PollSent     Latency        `json:"poll_from_sending"`
	PollStatuses map[string]int `json:"poll_statuses"`
	// The reference: the polling window's schedule (the same visitors,
	// due times and connections) replayed with GET /api/v1/me, right
	// after; RefSeconds of it.
	RefSeconds  float64        `json:"ref_seconds"`
	Ref         Latency        `json:"ref_me"`
	RefSent     Latency        `json:"ref_me_from_sending"`
	RefNotSent  int            `json:"ref_not_sent"`
	RefStatuses map[string]int `json:"ref_statuses"`
	// Position updates: each admission step in [UpdateFrom, UpdateFrom +
	// UpdateSeconds) after the opening (every visitor has had its first
	// answer by then) moves every waiting visitor up. For each waiting
	// visitor and step, Update is the time from the step (its admissions'
	// time in Redis) until the visitor's next answer shows its new place
	// (or its admission); UpdateGap is the poll interval the visitor's
	// page waited before that answer (the reference), UpdateLate how far
	// past that interval the answer came (its latency, plus a whole
	// interval more had an answer after the step still shown the old
	// place). The polls go on until every visitor's next answer after the
	// last step is in; UpdateUnseen counts the pairs none showed.
	UpdateFrom    float64 `json:"update_from_seconds"`
	UpdateSeconds float64 `json:"update_seconds"`
	UpdateTicks   int     `json:"update_ticks"`
	Update        Latency `json:"update"`
	UpdateGap     Latency `json:"update_poll_interval"`
	UpdateLate    Latency `json:"update_past_interval"`
	UpdateUnseen  int     `json:"update_unseen"`
	// Admissions from opening + 2 s to the end of the holds window, read
	// from the line's admitted set in Redis (each admission's time on
	// Redis's clock): Admitted after the window's first admission tick up
	// to its last, AdmitSeconds between those ticks, and the rate a
	// minute, against the set rate.
	AdmitSeconds      float64 `json:"admit_seconds"`
	Admitted          int     `json:"admitted"`
	AdmittedPerMinute float64 `json:"admitted_per_minute"`
	// Holds by admitted buyers (a valid admission each) in a closed loop
	// while the line waits and polls, and the same buyers on the same
	// event right after, the room turned off and nobody polling.
	Holds    *Load `json:"holds_while_waiting"`
	HoldsRef *Load `json:"holds_without_room"`
}

// roomSecret signs the room process's admissions; the bench signs its
// holders' admissions with it too.
const roomSecret = "seatbench-waiting-room-secret-0123456789"

// phaseRoom: a fresh process, an event whose room opens later, every
// visitor joins (cold), the room opens at the set rate, the visitors poll
// (steady) and then, still polling, admitted buyers hold; then the
// reference polls and holds.
func (b *bench) phaseRoom(ctx context.Context) error {
	b.procs.stopNamed("main", "fallback", "live", "expiry", "waitlist", "door")
	n := b.cfg.roomVisitors
	rm := &Room{Visitors: n, RatePerMinute: b.cfg.roomRate, JoinConns: 32, PollConns: 64,
		PollSeconds: b.cfg.roomPoll.Seconds(), PollSpread: 30, UpdateFrom: 32, UpdateSeconds: 5}
	s, err := b.procs.start(ctx, "room", map[string]string{"SEATD_QUEUE_SECRET": roomSecret, "SEATD_QUEUE_ADMISSION": "5m"})
	if err != nil {
		return err
	}
	defer b.procs.stop(s)
	ev, seats, err := b.fx.newEvent(ctx, "waiting room", b.cfg.roomSeats, false)
	if err != nil {
		return err
	}
	if err := b.load.warm(ctx, []*server{s}, ev); err != nil {
		return err
	}
	start := time.Now()
	visitors, err := b.fx.seedVisitors(ctx, n, "visitor")
	if err != nil {
		return err
	}
	b.log.printf("room: %d visitors signed in (sessions written in Postgres) in %s", n, time.Since(start).Round(100*time.Millisecond))

	before, err := s.memoryAfterGC(ctx)
	if err != nil {
		return err
	}
	rm.HeapBeforeMiB = round3(before.heap / (1 << 20))
	if err := setRoom(ctx, s, b.fx.organizer, ev, map[string]any{"enabled": true, "opens_at": time.Now().Add(time.Hour).UTC(),
		"rate_per_minute": b.cfg.roomRate}); err != nil {
		return err
	}
	queue := "/api/v1/events/" + ev + "/queue"
	var early int
	var earlyMu sync.Mutex
	rm.Join, rm.JoinPerSec, err = closedLoop(ctx, rm.JoinConns, n, func(i int) error {
		code, body, err := s.call(ctx, visitors[i], http.MethodPost, queue, nil)
		if err != nil {
			return err
		}
		var a struct {
			State string `json:"state"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &a) != nil {
			return fmt.Errorf("join: %d %s", code, body)
		}
		if a.State != string(waitroom.BeforeOpening) {
			earlyMu.Lock()
			early++
			earlyMu.Unlock()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if early > 0 {
		return fmt.Errorf("%d joins before the opening answered another state than before_opening", early)
	}
	joined, err := s.memoryAfterGC(ctx)
	if err != nil {
		return err
	}
	perVisitor := func(a, b float64) float64 { return round3((b - a) / float64(n)) }
	rm.HeapPerVisitorJoined = perVisitor(before.heap, joined.heap)
	rm.RSSPerVisitorJoined = perVisitor(float64(before.rss), float64(joined.rss))
	b.log.printf("room: %d joined, %.0f/s, p99 %.1f ms; heap %.0f B, RSS %.0f B a visitor",
		n, rm.JoinPerSec, rm.Join.P99, rm.HeapPerVisitorJoined, rm.RSSPerVisitorJoined)

	rank, err := lineRanks(ctx, b.redisURL, b.fx.orgID, ev, visitors)
	if err != nil {
		return err
	}

	// The opening: a second from now, on the process's and Redis's clock.
	opens := time.Now().Add(time.Second).Truncate(time.Millisecond)
	if err := setRoom(ctx, s, b.fx.organizer, ev, map[string]any{"opens_at": opens.UTC()}); err != nil {
		return err
	}
	sleepUntil(ctx, opens.Add(100*time.Millisecond))
	pollStart := time.Now()
	holdsAt := pollStart.Add(b.cfg.roomPoll)
	updFrom := opens.Add(time.Duration(rm.UpdateFrom * float64(time.Second)))
	updTo := updFrom.Add(time.Duration(rm.UpdateSeconds * float64(time.Second)))
	end := holdsAt.Add(b.cfg.warmup + b.cfg.roomHolds)
	if last := updTo.Add(maxPollGap); last.After(end) {
		end = last
	}
	first := make([]due, n)
	spread := time.Duration(rm.PollSpread * float64(time.Second))
	for i := range first {
		first[i] = due{at: pollStart.Add(time.Duration(rand.Int64N(int64(spread)))), client: i} // #nosec G404 -- a spread, not a secret
	}
	answers := make([][]answer, n)
	waited := make([]time.Duration, n)
	for _, d := range first {
		waited[d.client] = d.at.Sub(opens) // the page waited since before the opening
	}
	var holds sync.WaitGroup
	var holders []*session
	var holdsErr error
	holds.Go(func() {
		sleepUntil(ctx, holdsAt)
		// Admitted as they arrive, so a long polling window does not
		// outlast their admissions.
		holders, holdsErr = admitted(b.fx.orgID, ev, b.fx.buyers[:min(32, len(b.fx.buyers))])
		if holdsErr != nil {
			return
		}
		if b.cfg.profileRoom {
			var wg sync.WaitGroup
			defer wg.Wait()
			wg.Go(func() { b.profileNamed(s, "room", b.cfg.profileFor)(ctx) })
		}
		rm.Holds = b.load.closedLoop(ctx, []*server{s}, holders, ev, seats[:len(seats)/2], b.cfg.warmup, b.cfg.roomHolds, nil)
	})
	// Each visitor's answers are its own (one request in flight at a
	// time, the next due only after this one's answer is read).
	polls, notSent := scheduled(ctx, s, visitors, rm.PollConns, first, end, http.MethodPost, func(int) string { return queue },
		func(v, code int, body []byte, done time.Time) (time.Time, bool) {
			var a struct {
				State     string `json:"state"`
				Position  int64  `json:"position"`
				PollAfter int    `json:"poll_after_seconds"`
			}
			if code != http.StatusOK || json.Unmarshal(body, &a) != nil {
				return time.Time{}, false // refused: the page leaves
			}
			answers[v] = append(answers[v], answer{done: done, gap: waited[v], position: a.Position, admitted: a.State == string(waitroom.Admitted)})
			if a.State != string(waitroom.Waiting) {
				return time.Time{}, false // let in: the page goes to the map
			}
			wait := time.Duration(float64(a.PollAfter) * float64(time.Second) * (0.9 + 0.2*rand.Float64())) // #nosec G404 -- a spread
			waited[v] = wait
			return done.Add(wait), true
		})
	holds.Wait()
	if err := cmp.Or(holdsErr, ctx.Err()); err != nil {
		return err
	}
	rm.PollNotSent = notSent
	rm.Poll, rm.PollSent, rm.PollStatuses = sentLatency(polls, pollStart, holdsAt)
	rm.Polls = rm.Poll.N
	rm.PollPerSec = round3(float64(rm.Polls) / b.cfg.roomPoll.Seconds())
	if err := rm.admissions(ctx, b.redisURL, b.fx.orgID, ev, opens.Add(2*time.Second), end); err != nil {
		return err
	}
	if err := rm.measureUpdates(ctx, b.redisURL, b.fx.orgID, ev, answers, rank, opens, updFrom, updTo); err != nil {
		return err
	}
	polling, err := s.memoryAfterGC(ctx)
	if err != nil {
		return err
	}
	rm.HeapPerVisitorPolling = perVisitor(before.heap, polling.heap)
	rm.RSSPerVisitorPolling = perVisitor(float64(before.rss), float64(polling.rss))

	// The reference: the polling window's schedule, from its start,
	// replayed with GET /api/v1/me.
	refFor := min(b.cfg.roomPoll, b.cfg.roomRef)
	rm.RefSeconds = refFor.Seconds()
	refStart := time.Now().Add(100 * time.Millisecond)
	var replay []due
	for _, p := range polls {
		if off := p.at.Sub(pollStart); off >= 0 && off < refFor {
			replay = append(replay, due{at: refStart.Add(off), client: int(p.client)})
		}
	}
	refs, refNotSent := scheduled(ctx, s, visitors, rm.PollConns, replay, refStart.Add(refFor),
		http.MethodGet, func(int) string { return "/api/v1/me" }, func(int, int, []byte, time.Time) (time.Time, bool) { return time.Time{}, false })
	rm.Ref, rm.RefSent, rm.RefStatuses = sentLatency(refs, refStart, refStart.Add(refFor))
	rm.RefNotSent = refNotSent

	// Holds without the room: turned off, nobody polling.
	if err := setRoom(ctx, s, b.fx.organizer, ev, map[string]any{"enabled": false}); err != nil {
		return err
	}
	rm.HoldsRef = b.load.closedLoop(ctx, []*server{s}, holders, ev, seats[len(seats)/2:], b.cfg.warmup, b.cfg.roomHolds, nil)
	b.rep.Room = rm
	b.log.printf("room: position update to every visitor p99 %.1f s, max %.1f s (%d steps, %d pairs, %d unseen); the page's poll interval p99 %.1f s; past it p99 %.0f ms, max %.0f ms",
		rm.Update.P99/1000, rm.Update.Max/1000, rm.UpdateTicks, rm.Update.N, rm.UpdateUnseen, rm.UpdateGap.P99/1000, rm.UpdateLate.P99, rm.UpdateLate.Max)
	b.log.printf("room: polls %.0f/s p99 %.1f ms from due (%.1f from sending), %d not sent; GET /api/v1/me p99 %.1f ms; admitted %.0f/min of %d; heap %.0f B a visitor polling; holds p99 %.1f ms waiting, %.1f ms without",
		rm.PollPerSec, rm.Poll.P99, rm.PollSent.P99, rm.PollNotSent, rm.Ref.P99, rm.AdmittedPerMinute, rm.RatePerMinute,
		rm.HeapPerVisitorPolling, rm.Holds.Latency.P99, rm.HoldsRef.Latency.P99)
	return nil
}

// setRoom changes the event's waiting room through the API, as its
// organizer.
func setRoom(ctx context.Context, s *server, organizer *session, ev string, room map[string]any) error {
	body, _ := json.Marshal(map[string]any{"waiting_room": room})
	code, raw, err := s.call(ctx, organizer, http.MethodPatch, "/api/v1/events/"+ev, body)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("PATCH waiting_room %s: %d %s", body, code, raw)
	}
	return nil
}

// admitted is buyers, each carrying an admission to ev signed as the room
// process signs them (the server secret, the session's stored token):
// buyers who were let in, without taking places from the measured line.
func admitted(orgID, ev string, buyers []*session) ([]*session, error) {
	org, err := uuid.Parse(orgID)
	if err != nil {
		return nil, err
	}
	event, err := uuid.Parse(ev)
	if err != nil {
		return nil, err
	}
	passes := waitroom.NewPasses(roomSecret, 5*time.Minute)
	out := make([]*session, len(buyers))
	for i, bu := range buyers {
		_, token, ok := strings.Cut(bu.cookie, "=")
		if !ok {
			return nil, fmt.Errorf("buyer cookie %q has no value", bu.cookie)
		}
		sum := sha256.Sum256([]byte(token))
		pass, _ := passes.Issue(org, event, base64.RawURLEncoding.EncodeToString(sum[:]))
		c := *bu
		c.cookie = bu.cookie + "; seatd_queue_" + ev + "=" + pass
		out[i] = &c
	}
	return out, nil
}

// admissions measures the admission rate in [from, to) on Redis's clock,
// from the line's admitted set (each admission's time; the set keeps an
// admission for SEATD_QUEUE_ADMISSION, longer than the window). The
// admitter lets a batch in each tick, so the rate is taken from tick to
// tick: the admissions after the window's first tick, up to and with its
// last, over the time between the two (a plain count over the window
// would be off by up to a tick's batch).
func (rm *Room) admissions(ctx context.Context, redisURL, org, ev string, from, to time.Time) error {
	u, err := url.Parse(redisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: u.Host})
	defer rdb.Close()
	key := "seatd:{" + org + ":" + ev + "}:wr:admitted"
	zs, err := rdb.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Min: fmt.Sprint(from.UnixMilli()), Max: "(" + fmt.Sprint(to.UnixMilli())}).Result()
	if err != nil {
		return fmt.Errorf("read admissions: %w", err)
	}
	if len(zs) == 0 {
		return fmt.Errorf("nobody was admitted in the %s after the opening", to.Sub(from).Round(time.Second))
	}
	at := make([]float64, len(zs))
	for i, z := range zs {
		at[i] = z.Score
	}
	n, secs := tickRate(at)
	if secs <= 0 {
		return fmt.Errorf("admissions in one tick only: lengthen -room-poll")
	}
	rm.AdmitSeconds = round3(secs)
	rm.Admitted = n
	rm.AdmittedPerMinute = round3(float64(n) / secs * 60)
	return nil
}

// tickRate reads admissions' times (ms, ascending) as batches let in at
// ticks: the admissions after the first tick, and the seconds from the
// first tick to the last.
func tickRate(at []float64) (int, float64) {
	if len(at) == 0 {
		return 0, 0
	}
	n := 0
	for _, t := range at {
		if t > at[0] {
			n++
		}
	}
	return n, (at[len(at)-1] - at[0]) / 1000
}

// memoryAfterGC is memory() right after a forced collection (the ops
// listener's heap profile with gc=1 runs one), so garbage not yet
// collected does not count as memory in use.
func (s *server) memoryAfterGC(ctx context.Context) (memSnap, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.ops+"/debug/pprof/heap?gc=1", nil)
	if err != nil {
		return memSnap{}, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return memSnap{}, fmt.Errorf("force a GC: %w", err)
	}
	if resp.StatusCode == http.StatusOK {
		err = saveHeapProfile(s.name, resp.Body)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return memSnap{}, fmt.Errorf("force a GC: %s", resp.Status)
	}
	if err != nil {
		return memSnap{}, fmt.Errorf("save the heap profile: %w", err)
	}
	return s.memory(ctx)
}

// heapProfiles counts the profiles saved, to name them in order.
var heapProfiles atomic.Int64

// saveHeapProfile keeps the heap profile read by memoryAfterGC as
// $SEATBENCH_HEAP_PROFILES/<server>-<n>.pb.gz when that is set, for
// `go tool pprof -top -inuse_space` on what the memory rows count.
func saveHeapProfile(name string, body io.Reader) error {
	dir := os.Getenv("SEATBENCH_HEAP_PROFILES")
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.pb.gz", name, heapProfiles.Add(1)))
	f, err := os.Create(filepath.Clean(path))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
