package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"seatd/internal/apperr"
	"seatd/internal/coalesce"
)

// HoldKey names a keyed hold request: the buyer's Idempotency-Key and a
// fingerprint of what was asked, so the key cannot be reused for another
// request; Request is this request's own id, which the holds it makes
// carry (HoldParams.Request).
type HoldKey struct {
	Org, User, Event uuid.UUID
	Key, Hash        string
	Request          uuid.UUID
}

// HoldClaim is what claiming a key found.
type HoldClaim struct {
	// Mine: this request holds the key and must make the holds, with
	// HoldParams.Request its HoldKey.Request (or DropRequest when it
	// holds nothing).
	Mine bool
	// HoldIDs are the holds the first request made (Done).
	HoldIDs []uuid.UUID
	Done    bool
}

// ClaimRequest claims a hold request's key, or says what became of
// the request that claimed it first: done (the holds that carry its
// request id, committed with them), or still running. A claim left
// without holds for longer than stale (its process died mid-request) is
// taken over. A key used with another request is refused
// (idempotency_mismatch).
//
// Concurrent claims share one statement (see keyBatches): in a crowd's
// burst of keyed requests (what the map's best-seats form sends), a
// statement and a commit of its own for each claim (and then for each
// record of its holds, which the holds' request id has since replaced)
// about tripled Postgres's CPU of the burst.
func (s *Holds) ClaimRequest(ctx context.Context, k HoldKey, stale time.Duration) (HoldClaim, error) {
	r, err := s.keys.claims.Do(ctx, claimReq{k: k, stale: stale})
	if err != nil {
		return HoldClaim{}, err
	}
	return r.c, r.err
}

// keyBatches coalesces keyed hold requests' claims.
type keyBatches struct {
	claims *coalesce.Batcher[claimReq, claimRes]
}

type claimReq struct {
	k     HoldKey
	stale time.Duration
}

type claimRes struct {
	c   HoldClaim
	err error
}

// keyBatchSlots and keyBatchMax bound the claim statements in flight at
// once and the keys in one.
const keyBatchSlots, keyBatchMax = 2, 128

func newKeyBatches(db *pgxpool.Pool) keyBatches {
	return keyBatches{
		claims: coalesce.New(keyBatchSlots, keyBatchMax, func(ctx context.Context, b []*coalesce.Call[claimReq, claimRes]) { runClaims(ctx, db, b) }),
	}
}

// keyOf names a keyed request's row.
type keyOf struct {
	org, user uuid.UUID
	key       string
}

func (k HoldKey) row() keyOf { return keyOf{k.Org, k.User, k.Key} }

// runClaims claims a batch's keys in one statement per stale bound (one,
// in practice). A key asked twice in one batch (two repeats at once) goes
// into the statement once; the repeat is answered from the row as the
// first left it: claimed by the first, without holds yet (the repeat waits
// and asks again, as behind another statement's claim), or as found. The
// statement does not follow its sender's cancellation: it carries others'
// claims.
func runClaims(ctx context.Context, db *pgxpool.Pool, batch []*coalesce.Call[claimReq, claimRes]) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	groups := map[time.Duration][]*coalesce.Call[claimReq, claimRes]{}
	seen := make(map[keyOf]bool, len(batch))
	var dups []*coalesce.Call[claimReq, claimRes]
	for _, c := range batch {
		if seen[c.Req.k.row()] {
			dups = append(dups, c)
			continue
		}
		seen[c.Req.k.row()] = true
		groups[c.Req.stale] = append(groups[c.Req.stale], c)
	}
	found := make(map[keyOf]keyRow, len(seen))
	for stale, calls := range groups {
		for i, r := range claimGroup(ctx, db, stale, calls) {
			k := calls[i].Req.k
			calls[i].Answer(r.claim(k))
			if r.mine {
				// The row is now the first's, without holds yet.
				r = keyRow{hash: k.Hash}
			}
			found[k.row()] = r
		}
	}
	for _, c := range dups {
		c.Answer(found[c.Req.k.row()].claim(c.Req.k))
	}
}

// keyRow is what a claim statement found of a key's row.
type keyRow struct {
	err  error
	mine bool // claimed by this statement
	hash string
	ids  []uuid.UUID
}

// claim is what the row means to a request under key k.
func (r keyRow) claim(k HoldKey) claimRes {
	switch {
	case r.err != nil:
		return claimRes{err: r.err}
	case r.mine:
		return claimRes{c: HoldClaim{Mine: true}}
	case r.hash != k.Hash:
		return claimRes{err: apperr.E(apperr.IdempotencyMismatch, "this Idempotency-Key was used for a different hold request")}
	}
	return claimRes{c: HoldClaim{HoldIDs: r.ids, Done: r.ids != nil}}
}

// claimGroup claims calls' keys (no key twice) in one statement and
// returns what it found of each, in calls' order.
func claimGroup(ctx context.Context, db *pgxpool.Pool, stale time.Duration, calls []*coalesce.Call[claimReq, claimRes]) []keyRow {
	n := len(calls)
	orgs, users, keys, events, hashes := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]string, n), make([]uuid.UUID, n), make([]string, n)
	requests := make([]uuid.UUID, n)
	for i, c := range calls {
		k := c.Req.k
		orgs[i], users[i], keys[i], events[i], hashes[i], requests[i] = k.Org, k.User, k.Key, k.Event, k.Hash, k.Request
	}
	// The keys go in in one order in every statement, so two statements
	// that meet on keys (repeats on two processes) wait, not deadlock.
	// Every key's row comes back from the insert: a key already there is
	// updated, even when not claimed (its claim and request id then stay
	// as they were), so the statement reads no row of hold_requests but
	// through the key's index. Left to a join, a new database's statement
	// was planned on the empty table as a scan of all of it, which its
	// connection kept until the table's next ANALYZE: in a sale's first
	// minute every claim read the whole, growing table. A request is done
	// once holds carrying its id are committed (or hold_ids, recorded
	// after the holds before migration 028), and a stale claim with such
	// holds is not taken over. The holds are listed in the order of their
	// ids, which the request made in the order of its answer (NewID:
	// time-ordered).
	rows, err := db.Query(ctx, `
		WITH r AS (
		    SELECT * FROM unnest($1::int[], $2::uuid[], $3::uuid[], $4::text[], $5::uuid[], $6::text[], $8::uuid[])
		        AS r(i, org_id, user_id, idempotency_key, event_id, request_hash, request_id)
		), claimed AS (
		    INSERT INTO hold_requests AS h (org_id, user_id, idempotency_key, event_id, request_hash, request_id)
		    SELECT org_id, user_id, idempotency_key, event_id, request_hash, request_id FROM r
		    ORDER BY org_id, user_id, idempotency_key
		    ON CONFLICT (org_id, user_id, idempotency_key) DO UPDATE
		    SET claimed_at = CASE WHEN `+takeOver+` THEN now() ELSE h.claimed_at END,
		        request_id = CASE WHEN `+takeOver+` THEN excluded.request_id ELSE h.request_id END
		    RETURNING h.org_id, h.user_id, h.idempotency_key, h.request_id, h.request_hash, h.hold_ids
		), mine AS (
		    SELECT r.i, c.*, c.request_id IS NOT DISTINCT FROM r.request_id AS mine
		    FROM r JOIN claimed c ON c.org_id = r.org_id AND c.user_id = r.user_id AND c.idempotency_key = r.idempotency_key
		)
		SELECT i, mine, request_hash,
		       CASE WHEN NOT mine THEN coalesce(hold_ids, (SELECT array_agg(x.id ORDER BY x.id) FROM seat_holds x
		                                                  WHERE x.org_id = m.org_id AND x.request_id = m.request_id)) END
		FROM mine m`,
		seq(n), orgs, users, keys, events, hashes, stale, requests)
	out := make([]keyRow, n)
	if err == nil {
		var i int
		var r keyRow
		_, err = pgx.ForEachRow(rows, []any{&i, &r.mine, &r.hash, &r.ids}, func() error {
			out[i] = r
			r.ids = nil // a fresh slice for the next row
			return nil
		})
	}
	if err != nil {
		for i := range out {
			out[i] = keyRow{err: err}
		}
	}
	return out
}

// takeOver says whether a claim statement takes over the claim h it met
// for the request excluded: the same request, claimed longer ago than the
// statement's stale bound ($7) and left without holds (its process died).
const takeOver = `(h.hold_ids IS NULL AND h.request_hash = excluded.request_hash AND h.claimed_at < now() - $7::interval
		      AND NOT EXISTS (SELECT 1 FROM seat_holds x WHERE x.org_id = h.org_id AND x.request_id = h.request_id))`

// seq is 0, 1, ..., n-1.
func seq(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i) // #nosec G115 -- a batch is at most keyBatchMax
	}
	return out
}

// DropRequest frees the key of a claimed request that held nothing:
// its claim goes unless holds carrying its request id were committed (a
// hold whose outcome its caller never heard), which answer a repeat.
func (s *Holds) DropRequest(ctx context.Context, k HoldKey) error {
	_, err := s.db.Exec(ctx, `
		DELETE FROM hold_requests h WHERE org_id = $1 AND user_id = $2 AND idempotency_key = $3 AND request_id = $4
		  AND hold_ids IS NULL AND NOT EXISTS (SELECT 1 FROM seat_holds x WHERE x.org_id = h.org_id AND x.request_id = h.request_id)`,
		k.Org, k.User, k.Key, k.Request)
	return err
}

// PruneRequests deletes up to limit keyed hold requests claimed
// before before and reports how many went: a repeat of one is then a new
// request. A claim still running that long ago has a dead process.
func (s *Holds) PruneRequests(ctx context.Context, before time.Time, limit int) (int64, error) {
	tag, err := s.db.Exec(ctx, `
		DELETE FROM hold_requests WHERE (org_id, user_id, idempotency_key) IN (
		    SELECT org_id, user_id, idempotency_key FROM hold_requests WHERE claimed_at < $1 ORDER BY claimed_at LIMIT $2)`,
		before, limit)
	return tag.RowsAffected(), err
}

// ByIDs returns holds of org by id, whatever their status, in the
// order of ids (a missing one is left out).
func (s *Holds) ByIDs(ctx context.Context, org uuid.UUID, ids []uuid.UUID) ([]Hold, error) {
	rows, err := s.db.Query(ctx, holdColumns+` WHERE org_id = $1 AND id = ANY($2::uuid[]) ORDER BY array_position($2::uuid[], id)`,
		org, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanHold)
}
