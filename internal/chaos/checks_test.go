package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// sqlInvariants are the states no fault may ever produce, scoped to one
// event ($1). Each query counts offending rows.
var sqlInvariants = []struct{ name, sql string }{
	{"two active holds on a seat", `SELECT count(*) FROM (SELECT seat_id FROM seat_holds WHERE event_id = $1 AND status = 'active' GROUP BY seat_id HAVING count(*) > 1) x`},
	{"two live tickets on a seat", `SELECT count(*) FROM (SELECT seat_id FROM tickets WHERE event_id = $1 AND cancelled_at IS NULL GROUP BY seat_id HAVING count(*) > 1) x`},
	{"held seat without its active hold", `SELECT count(*) FROM seats s WHERE s.event_id = $1 AND s.status = 'held' AND NOT EXISTS (SELECT 1 FROM seat_holds h WHERE h.id = s.hold_id AND h.status = 'active' AND h.seat_id = s.id)`},
	{"active hold on a seat not held by it", `SELECT count(*) FROM seat_holds h JOIN seats s ON s.id = h.seat_id WHERE h.event_id = $1 AND h.status = 'active' AND (s.status <> 'held' OR s.hold_id <> h.id)`},
	{"sold seat without exactly one ticket", `SELECT count(*) FROM seats s WHERE s.event_id = $1 AND s.status = 'sold' AND (SELECT count(*) FROM tickets t WHERE t.seat_id = s.id AND t.cancelled_at IS NULL) <> 1`},
	{"ticket on an unsold seat or without booking", `SELECT count(*) FROM tickets t LEFT JOIN bookings b ON b.id = t.booking_id JOIN seats s ON s.id = t.seat_id WHERE t.event_id = $1 AND t.cancelled_at IS NULL AND (b.id IS NULL OR s.status <> 'sold')`},
	{"converted hold without its ticket", `SELECT count(*) FROM seat_holds h WHERE h.event_id = $1 AND h.status = 'converted' AND NOT EXISTS (SELECT 1 FROM tickets t WHERE t.hold_id = h.id AND t.seat_id = h.seat_id)`},
	{"ticket whose hold was not converted", `SELECT count(*) FROM tickets t JOIN seat_holds h ON h.id = t.hold_id WHERE t.event_id = $1 AND h.status <> 'converted'`},
	{"booking without tickets", `SELECT count(*) FROM bookings b WHERE b.event_id = $1 AND NOT EXISTS (SELECT 1 FROM tickets t WHERE t.booking_id = b.id)`},
	{"hold expired before its time", `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND status = 'expired' AND ended_at < held_until`},
	// General admission never oversells: a GA section's active holds and
	// live tickets together stay within its capacity.
	{"GA section oversold", `SELECT count(*) FROM sections sc WHERE sc.event_id = $1 AND sc.kind = 'ga' AND
		(SELECT count(*) FROM seat_holds h JOIN seats s ON s.id = h.seat_id WHERE s.section_id = sc.id AND h.status = 'active') +
		(SELECT count(*) FROM tickets t JOIN seats s ON s.id = t.seat_id WHERE s.section_id = sc.id AND t.cancelled_at IS NULL) > sc.capacity`},
	// The revenue counters (migration 026) are kept in the transactions of
	// the sales and cancellations: they always sum to what the live
	// tickets were paid, by category and currency.
	{"revenue counters differ from the live tickets", `SELECT count(*) FROM
		(SELECT category, currency, sum(paid_minor) AS n FROM event_revenue WHERE event_id = $1
		 GROUP BY category, currency HAVING sum(paid_minor) <> 0) r
		FULL JOIN (SELECT s.category, t.currency, sum(t.price_minor) AS n FROM tickets t JOIN seats s ON s.id = t.seat_id
		           WHERE t.event_id = $1 AND t.cancelled_at IS NULL AND s.category IS NOT NULL
		             AND t.currency IS NOT NULL AND t.price_minor IS NOT NULL
		           GROUP BY s.category, t.currency) p USING (category, currency)
		WHERE r.n IS DISTINCT FROM p.n`},
	// The waitlist offers each entry once, whatever process dies when: an
	// entry is offered exactly when its offer is audited, once; the offer
	// names holds of its own buyer, made for it; and every hold made for
	// an offer is named by one.
	{"waitlist entry offered twice", `SELECT count(*) FROM (SELECT entity_id FROM audit_log WHERE event_id = $1 AND action = 'waitlist.offered'
		GROUP BY entity_id HAVING count(*) > 1) x`},
	{"waitlist entry offered without its audit", `SELECT count(*) FROM waitlist_entries w WHERE w.event_id = $1 AND w.status = 'offered'
		AND NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.event_id = $1 AND a.action = 'waitlist.offered' AND a.entity_id = w.id)`},
	{"waitlist entry audited as offered but not offered", `SELECT count(*) FROM audit_log a JOIN waitlist_entries w ON w.id = a.entity_id
		WHERE a.event_id = $1 AND a.action = 'waitlist.offered' AND w.status <> 'offered'`},
	{"offer naming a hold not made for its buyer", `SELECT count(*) FROM waitlist_entries w CROSS JOIN unnest(w.hold_ids) AS x(hold_id)
		LEFT JOIN seat_holds h ON h.id = x.hold_id
		WHERE w.event_id = $1 AND (h.id IS NULL OR h.user_id <> w.user_id OR h.source <> 'waitlist' OR h.event_id <> w.event_id)`},
	{"waitlist hold no offer names", `SELECT count(*) FROM seat_holds h WHERE h.event_id = $1 AND h.source = 'waitlist'
		AND NOT EXISTS (SELECT 1 FROM waitlist_entries w WHERE w.event_id = $1 AND h.id = ANY (w.hold_ids))`},
}

// waitlistServed checks, once the load has stopped, that the waitlist's
// durable work was done within wait: no work left queued, and no one
// still waiting while a seat of waitSection is free for them (a seat freed
// while a process was down, or just before it died, is offered all the
// same).
func (c *cluster) waitlistServed(ctx context.Context, wait time.Duration) []violation {
	var work, waiting, free int
	deadline := time.Now().Add(wait)
	for {
		err := c.admin.Pool.QueryRow(ctx, `
			SELECT (SELECT count(*) FROM waitlist_work WHERE event_id = $1),
			       (SELECT count(*) FROM waitlist_entries WHERE event_id = $1 AND status = 'waiting'),
			       (SELECT count(*) FROM seats s JOIN sections c ON c.id = s.section_id
			        WHERE s.event_id = $1 AND c.label = $2 AND s.status = 'available' AND NOT s.accessible AND NOT s.companion)`,
			c.event.ID, waitSection).Scan(&work, &waiting, &free)
		switch {
		case err != nil:
			return []violation{{msg: "waitlist: " + err.Error()}}
		case work == 0 && (waiting == 0 || free == 0):
			return nil
		case time.Now().After(deadline):
			return []violation{{msg: fmt.Sprintf("waitlist not served %s after the load stopped: %d work rows queued, %d entries waiting with %d seats of section %s free",
				wait, work, waiting, free, waitSection)}}
		}
		time.Sleep(100 * time.Millisecond) // poll interval: the waitlist is served within wait
	}
}

// checkSQL runs the invariants and returns the broken ones.
func (c *cluster) checkSQL(ctx context.Context) []violation {
	var out []violation
	for _, inv := range sqlInvariants {
		var n int
		if err := c.admin.Pool.QueryRow(ctx, inv.sql, c.event.ID).Scan(&n); err != nil {
			out = append(out, violation{msg: fmt.Sprintf("%s: %v", inv.name, err)})
			continue
		}
		if n != 0 {
			out = append(out, violation{msg: fmt.Sprintf("%s (%d)", inv.name, n)})
		}
	}
	return out
}

// holdRow is a seat_holds row as the checks need it.
type holdRow struct {
	ID, Seat, User, ReleasedBy uuid.UUID
	Status                     string
	HeldUntil, CreatedAt       time.Time
	EndedAt                    *time.Time
	Ticket                     bool
}

// holdRows reads every hold of the event.
func (c *cluster) holdRows(ctx context.Context) (map[uuid.UUID]holdRow, error) {
	rows, err := c.admin.Pool.Query(ctx, `
		SELECT h.id, h.seat_id, h.user_id, coalesce(h.released_by, '00000000-0000-0000-0000-000000000000'::uuid),
		       h.status, h.held_until, h.created_at, h.ended_at,
		       EXISTS (SELECT 1 FROM tickets t WHERE t.hold_id = h.id)
		FROM seat_holds h WHERE h.org_id = $1 AND h.event_id = $2`, c.tenant.Org.ID, c.event.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[uuid.UUID]holdRow{}
	for rows.Next() {
		var h holdRow
		if err := rows.Scan(&h.ID, &h.Seat, &h.User, &h.ReleasedBy, &h.Status, &h.HeldUntil, &h.CreatedAt, &h.EndedAt, &h.Ticket); err != nil {
			return nil, err
		}
		out[h.ID] = h
	}
	return out, rows.Err()
}

// checkAcks checks every answer a client got against Postgres: a hold
// acknowledged (201/200) exists for that seat and user, and if it has ended
// since, it ended legitimately — released by its holder who asked for it,
// expired no earlier than the held_until the client was told, or converted
// with a ticket after the client asked to buy it. A 204 release left the
// hold released; a purchase answered 201/200 left it converted with its
// ticket, and replays named the first booking.
func checkAcks(ops []op, holds map[uuid.UUID]holdRow) []violation {
	released := map[uuid.UUID]bool{}  // holds someone asked to release
	purchased := map[uuid.UUID]bool{} // holds someone asked to buy
	for _, o := range ops {
		switch o.Kind {
		case opRelease:
			released[o.Hold] = true
		case opPurchase:
			purchased[o.Hold] = true
		}
	}
	var out []violation
	bad := func(o op, format string, args ...any) {
		v := violation{msg: fmt.Sprintf("%s at %s via %s: ", o, o.Call.Format("15:04:05.000"), o.Node) + fmt.Sprintf(format, args...)}
		if staleIdempotent(o, holds) {
			v.bug = bugStaleIdempotent
		}
		out = append(out, v)
	}
	for _, o := range ops {
		if o.Resolved {
			continue
		}
		switch {
		case o.Kind == opHold && (o.Result == resCreated || o.Result == resExisting):
			h, ok := holds[o.Hold]
			switch {
			case !ok:
				bad(o, "acknowledged hold does not exist in seat_holds")
			case h.Seat != o.Seat || h.User != o.User:
				bad(o, "acknowledged hold is for another seat or user")
			case !h.HeldUntil.Equal(o.Until):
				bad(o, "held_until %s in Postgres, %s in the answer", h.HeldUntil.UTC().Format(time.RFC3339Nano), o.Until.Format(time.RFC3339Nano))
			case h.Status == "released" && (!released[h.ID] || h.ReleasedBy != o.User):
				bad(o, "hold was released without its holder asking (by %s)", h.ReleasedBy)
			case h.Status == "expired" && h.EndedAt != nil && h.EndedAt.Before(o.Until):
				bad(o, "hold expired at %s, before the held_until the client was given", h.EndedAt.Format(time.RFC3339Nano))
			case h.Status == "converted" && (!purchased[h.ID] || !h.Ticket):
				bad(o, "hold was converted without a purchase or ticket")
			case o.Result == resExisting && h.Status != "active" && h.EndedAt != nil && h.EndedAt.Before(o.Call):
				bad(o, "200 answered with a hold that had already ended (%s at %s)", h.Status, h.EndedAt.Format("15:04:05.000"))
			}
		case o.Kind == opRelease && o.Result == resOK:
			if h, ok := holds[o.Hold]; !ok || h.Status != "released" {
				bad(o, "release answered 204 but the hold is %q", h.Status)
			}
		case o.Kind == opPurchase && o.Result == resOK:
			h, ok := holds[o.Hold]
			switch {
			case !ok || h.Status != "converted" || !h.Ticket:
				bad(o, "purchase answered OK but the hold is %q (ticket %v)", h.Status, h.Ticket)
			case o.Err != "":
				bad(o, "%s", o.Err)
			}
		}
	}
	return out
}

// seatDiff is one seat on which one map disagrees with Postgres.
type seatDiff struct {
	view      string // "watcher0@seatd1" or "seatd1/seats"
	node      string
	seat      uuid.UUID
	got, want seatState
}

// convergeError is a map that did not catch up with Postgres.
type convergeError struct {
	timeout time.Duration
	msgs    []string
	diffs   []seatDiff
}

func (e *convergeError) Error() string {
	return fmt.Sprintf("not converged after %s: %s", e.timeout, strings.Join(e.msgs, "; "))
}

type namedView struct {
	name, node string
	seats      map[uuid.UUID]seatState
}

// views reads every map: the watchers' and each running process's.
func (c *cluster) views(ctx context.Context, ws []*watcher, reader *client) ([]namedView, []string) {
	var out []namedView
	var errs []string
	for i, w := range ws {
		out = append(out, namedView{fmt.Sprintf("watcher%d@%s", i, w.n.name), w.n.name, w.snapshot()})
	}
	for _, n := range c.upNodes() {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		view, err := reader.seats(rctx, n, c.event.ID)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s /seats: %v", n.name, err))
			continue
		}
		out = append(out, namedView{n.name + "/seats", n.name, view})
	}
	return out, errs
}

// inFlight is how old a change may be and still not be on every map: the
// time a delta takes to travel, with room for a loaded two-core machine.
const inFlight = 300 * time.Millisecond

// converge waits until every watcher and every running process's seat map
// equal Postgres, and returns how long that took. Call it with the load
// stopped. The reaper still expires holds meanwhile, so a map may lag a
// change made less than inFlight before the maps were read: such seats are
// not held against it (they are checked again in the next round).
func (c *cluster) converge(ctx context.Context, ws []*watcher, reader *client, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		// Views first, then the truth: a change committed in between shows
		// as a view behind on a seat Postgres calls fresh; a view ahead of
		// Postgres would be a change published that never committed.
		read := time.Now()
		views, errs := c.views(ctx, ws, reader)
		truth, fresh, err := c.pgSeatsSince(ctx, read.Add(-inFlight))
		var msgs []string
		var diffs []seatDiff
		if err != nil {
			msgs = append(msgs, "postgres: "+err.Error())
		} else {
			msgs = append(msgs, errs...)
			for _, v := range views {
				n := 0
				for id, want := range truth {
					if got := v.seats[id]; got != want && !(fresh[id] && got.Version < want.Version) {
						n++
						diffs = append(diffs, seatDiff{view: v.name, node: v.node, seat: id, got: got, want: want})
					}
				}
				if n > 0 {
					msgs = append(msgs, fmt.Sprintf("%s: %d seats differ", v.name, n))
				}
			}
		}
		if len(msgs) == 0 {
			return time.Since(start), nil
		}
		if time.Since(start) > timeout {
			return time.Since(start), &convergeError{timeout: timeout, msgs: msgs, diffs: diffs}
		}
		time.Sleep(25 * time.Millisecond) // poll interval: the time to converge is the figure measured
	}
}

// explainSeat gathers what is known about one seat: Postgres's row and
// holds, every map's view, and the recent operations on it.
func (c *cluster) explainSeat(ctx context.Context, seat uuid.UUID, ws []*watcher, reader *client, ops []op, since time.Time) string {
	var b strings.Builder
	var st seatState
	_ = c.admin.Pool.QueryRow(ctx, `SELECT status, version FROM seats WHERE id = $1`, seat).Scan(&st.Status, &st.Version)
	fmt.Fprintf(&b, "seat %s: postgres %s v%d", seat, st.Status, st.Version)
	rows, err := c.admin.Pool.Query(ctx, `
		SELECT * FROM (SELECT id, user_id, status, created_at, ended_at, coalesce(released_by::text, '') FROM seat_holds
		WHERE seat_id = $1 AND (ended_at IS NULL OR ended_at > $2) ORDER BY created_at DESC LIMIT 8) x ORDER BY created_at`, seat, since)
	if err == nil {
		for rows.Next() {
			var id, user uuid.UUID
			var status, by string
			var created time.Time
			var ended *time.Time
			if rows.Scan(&id, &user, &status, &created, &ended, &by) == nil {
				e := "-"
				if ended != nil {
					e = ended.Format("15:04:05.000")
				}
				fmt.Fprintf(&b, "\n    hold %s user %s %s created %s ended %s", id.String()[:8], user.String()[:8], status,
					created.Format("15:04:05.000"), e)
			}
		}
		rows.Close()
	}
	views, _ := c.views(ctx, ws, reader)
	for _, v := range views {
		st := v.seats[seat]
		fmt.Fprintf(&b, "\n    %-22s %s v%d", v.name, st.Status, st.Version)
	}
	var recent []op
	for _, o := range ops {
		if o.Seat == seat && !o.Call.Before(since) {
			recent = append(recent, o)
		}
	}
	for _, o := range recent[max(0, len(recent)-12):] {
		{
			fmt.Fprintf(&b, "\n    [%s, %s] %s via %s %s", o.Call.Format("15:04:05.000"), o.Return.Format("15:04:05.000"), o, o.Node, o.Err)
		}
	}
	return b.String()
}

// fastPath waits until every running process reports the Redis fast path
// on /readyz (processes polled one after another, all again after any
// that is not ready) and says where the time went: how many polls, the
// slowest, and the polls that found a process not ready.
func (c *cluster) fastPath(ctx context.Context, reader *client, timeout time.Duration) (time.Duration, string, error) {
	start := time.Now()
	var polls int
	var slowest time.Duration
	var slowNode string
	var notReady []string
	summary := func() string {
		s := fmt.Sprintf("%d /readyz polls, slowest %s %s", polls, slowNode, slowest.Round(time.Millisecond))
		if len(notReady) > 0 {
			s += "; not ready: " + strings.Join(notReady, ", ")
		}
		return s
	}
	for {
		all := true
		for _, n := range c.upNodes() {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			t0 := time.Now()
			status, body, err := n.ready(rctx)
			took := time.Since(t0)
			cancel()
			polls++
			if took > slowest {
				slowest, slowNode = took, n.name
			}
			if err != nil || status != 200 || !strings.Contains(string(body), `"mode":"fast"`) {
				all = false
				if len(notReady) < 6 {
					what := strings.TrimSpace(string(body))
					if err != nil {
						what = err.Error()
					}
					notReady = append(notReady, fmt.Sprintf("%s at +%s in %s: %d %s", n.name,
						t0.Sub(start).Round(time.Millisecond), took.Round(time.Millisecond), status, what))
				}
				break
			}
		}
		if all {
			return time.Since(start), summary(), nil
		}
		if time.Since(start) > timeout {
			return time.Since(start), summary(), fmt.Errorf("fast path not back after %s", timeout)
		}
		time.Sleep(50 * time.Millisecond) // poll interval: the time to recover is the figure measured
	}
}

// organizer signs in the organization's organizer.
func (c *cluster) organizer(t testing.TB, tr http.RoundTripper) *client {
	t.Helper()
	cl, err := login(context.Background(), tr, c.nodes[0], c.tenant.Org.Slug, c.tenant.Organizer, -1)
	if err != nil {
		t.Fatalf("organizer login: %v", err)
	}
	return cl
}

// registry is GET .../registry: the tiers' hold counts.
type registry struct {
	HotCache   int      `json:"hot_cache"`
	Redis      int      `json:"redis"`
	Postgres   int      `json:"postgres"`
	Consistent bool     `json:"consistent"`
	Breaker    string   `json:"breaker"`
	Mismatches []string `json:"mismatches"`
	// GA: each GA section's held places in each tier; Consistent covers
	// them too.
	GA []struct {
		Section  string `json:"section"`
		Capacity int    `json:"capacity"`
		HotCache int    `json:"hot_cache"`
		Redis    int    `json:"redis"`
		Postgres int    `json:"postgres"`
	} `json:"ga"`
}

func (c *cluster) registry(ctx context.Context, org *client, n *node) (registry, error) {
	var r registry
	status, body, err := org.call(ctx, n, http.MethodGet, "/api/v1/events/"+c.event.ID.String()+"/registry", nil, nil)
	if err != nil {
		return r, err
	}
	if status != http.StatusOK {
		return r, &errStatus{status, string(body)}
	}
	return r, json.Unmarshal(body, &r)
}

// registryConsistent reports whether every running process's registry
// says the tiers agree.
func (c *cluster) registryConsistent(ctx context.Context, org *client) bool {
	for _, n := range c.upNodes() {
		if r, err := c.registry(ctx, org, n); err != nil || !r.Consistent {
			return false
		}
	}
	return true
}

// registryNote describes the registry's health on every running process.
func (c *cluster) registryNote(ctx context.Context, org *client) string {
	var parts []string
	for _, n := range c.upNodes() {
		r, err := c.registry(ctx, org, n)
		switch {
		case err != nil:
			parts = append(parts, n.name+" "+err.Error())
		case r.Consistent:
			part := fmt.Sprintf("%s consistent (%d", n.name, r.Postgres)
			for _, g := range r.GA {
				part += fmt.Sprintf(", %s %d/%d", g.Section, g.Postgres, g.Capacity)
			}
			parts = append(parts, part+")")
		default:
			parts = append(parts, fmt.Sprintf("%s INCONSISTENT hot %d redis %d pg %d %q", n.name, r.HotCache, r.Redis, r.Postgres, r.Mismatches))
		}
	}
	return "registry: " + strings.Join(parts, ", ")
}
