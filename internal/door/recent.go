package door

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The recent-scan cache: a ticket's admission, kept in Redis for a few
// minutes after it is recorded or found, so that the same ticket scanned
// again at the door (the holder tries twice, a friend reuses a
// screenshot) is answered "already admitted" without Postgres. It only
// ever says that: a miss goes to Postgres, which alone admits, so a lost,
// stale or flushed cache costs a query and nothing else. Errors are
// ignored for the same reason (the Redis client's timeouts are short).

// recentKey is a ticket's key, under its event's hash tag {org:event}
// like package seatlock's keys, so a cluster keeps an event's keys on one
// slot.
func (d *Door) recentKey(org, event, tkt uuid.UUID) string {
	return d.opts.KeyPrefix + ":{" + org.String() + ":" + event.String() + "}:scan:" + tkt.String()
}

// remember caches r, an admission or an answer naming one.
func (d *Door) remember(ctx context.Context, org, event uuid.UUID, r Result) {
	if d.rdb == nil || r.At.IsZero() {
		return
	}
	v := r.Entrance + "\n" + strconv.FormatInt(r.At.UnixMilli(), 10) + "\n" + strconv.FormatInt(r.AdmittedAt.UnixMilli(), 10)
	_ = d.rdb.Set(ctx, d.recentKey(org, event, r.Ticket), v, d.opts.RecentScans).Err()
}

// recall answers a scan of an admitted ticket from the cache; ok is
// false on a miss.
func (d *Door) recall(ctx context.Context, org, event, tkt, seat uuid.UUID) (Result, bool) {
	if d.rdb == nil {
		return Result{}, false
	}
	v, err := d.rdb.Get(ctx, d.recentKey(org, event, tkt)).Result()
	if err != nil {
		return Result{}, false
	}
	parts := strings.Split(v, "\n")
	if len(parts) != 3 {
		return Result{}, false
	}
	at, err1 := strconv.ParseInt(parts[1], 10, 64)
	recorded, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return Result{}, false
	}
	return Result{Outcome: AlreadyAdmitted, Ticket: tkt, Seat: &Seat{ID: seat}, Entrance: parts[0],
		At: time.UnixMilli(at).UTC(), AdmittedAt: time.UnixMilli(recorded).UTC(), Cached: true}, true
}
