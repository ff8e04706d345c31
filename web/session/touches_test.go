package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// countingDevices is the real device store, counting the touch
// statements and failing the first `fail` of them.
type countingDevices struct {
	DeviceStore
	mu         sync.Mutex
	statements int
	sizes      []int
	fail       int
}

func (d *countingDevices) Touch(ctx context.Context, ts []store.SessionTouch) error {
	d.mu.Lock()
	d.statements++
	d.sizes = append(d.sizes, len(ts))
	failing := d.fail > 0
	d.fail--
	d.mu.Unlock()
	if failing {
		return errors.New("refused for the test")
	}
	return d.DeviceStore.Touch(ctx, ts)
}

func (d *countingDevices) counts() (int, []int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.statements, append([]int(nil), d.sizes...)
}

// TestTouchesShareStatements: touches queued by many requests are written
// touchBatch to a statement, after the requests went on; two touches of
// one session merge (the later expiry, and its last-seen address); a
// failed statement's touches are written by the next one; and what is
// queued when Run stops is written before it returns.
func TestTouchesShareStatements(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	p := uuid.NewString()[:8] + "-"
	const n = 1200
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("%s%04d", p, i)
	}
	if _, err := a.Pool.Exec(ctx, `INSERT INTO sessions (token, data, expiry)
		SELECT t, '{"values":{}}', $2 FROM unnest($1::text[]) t`, tokens, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pool.Exec(ctx, `INSERT INTO user_sessions (token, org_id, user_id, device, ip, last_seen_at)
		SELECT t, $2, $2, 'test', '192.0.2.0/24', now() - interval '1 hour' FROM unnest($1::text[]) t`, tokens, uuid.New()); err != nil {
		t.Fatal(err)
	}
	// written counts the sessions whose expiry moved to `to` and, when
	// seen, whose last-seen address is the new one.
	written := func(toks []string, to time.Time, seen bool) int {
		t.Helper()
		var c int
		err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM sessions s JOIN user_sessions u USING (token)
			WHERE token = ANY($1) AND s.expiry = $2 AND (NOT $3 OR u.ip = '198.51.100.0/24')`, toks, to, seen).Scan(&c)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	later := now.Add(2 * time.Hour)

	// Queued before the writer runs: every one waits, none is written.
	dev := &countingDevices{DeviceStore: a.Store.Devices}
	tc := newTouches(dev, a.Log)
	for _, tok := range tokens {
		tc.add(store.SessionTouch{Token: tok, Expiry: later})
		tc.add(store.SessionTouch{Token: tok, Seen: true, IP: "198.51.100.0/24"})
	}
	if c := written(tokens, later, false); c != 0 {
		t.Fatalf("%d sessions written before the writer ran", c)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); tc.run(runCtx) }()
	testsvc.Eventually(t, 5*time.Second, "every touch written", func() bool { return written(tokens, later, true) == n })
	if st, sizes := dev.counts(); st != 3 || sizes[0] != touchBatch || sizes[1] != touchBatch || sizes[2] != n-2*touchBatch {
		t.Fatalf("%d statements of %v sessions; want 3: two of %d and the rest", st, sizes, touchBatch)
	}

	// A failed statement: its touches go with the next one.
	dev.mu.Lock()
	dev.fail = 1
	dev.mu.Unlock()
	st0, _ := dev.counts()
	latest := now.Add(3 * time.Hour)
	tc.add(store.SessionTouch{Token: tokens[0], Expiry: latest})
	testsvc.Eventually(t, 5*time.Second, "the failed touch written again", func() bool { return written(tokens[:1], latest, true) == 1 })
	if st, _ := dev.counts(); st-st0 != 2 {
		t.Fatalf("%d statements for one touch failing once; want 2", st-st0)
	}

	// Queued as the writer stops: written before run returns.
	last := now.Add(4 * time.Hour)
	tc.add(store.SessionTouch{Token: tokens[1], Expiry: last})
	stop()
	<-done
	if c := written(tokens[1:2], last, true); c != 1 {
		t.Fatal("a touch queued when the writer stopped was not written")
	}
}

// TestSpreadStretchesByToken: each token's period lies in [d, 1.5 d), the
// same every time, and a crowd's periods cover that range evenly (a
// fifth of it holds 15–25 % of 10 000 tokens), so the housekeeping of
// sessions that began together comes due over half a period.
func TestSpreadStretchesByToken(t *testing.T) {
	const d, n = 5 * time.Minute, 10_000
	var buckets [5]int
	for i := range n {
		tok := storedToken(fmt.Sprintf("token-%d", i))
		got := spread(tok, d)
		if got < d || got >= d+d/2 || got != spread(tok, d) {
			t.Fatalf("spread(%q) = %v (then %v); want one value in [%v, %v)", tok, got, spread(tok, d), d, d+d/2)
		}
		buckets[(got-d)*5/(d/2)]++
	}
	for i, c := range buckets {
		if c < n*15/100 || c > n*25/100 {
			t.Fatalf("fifth %d of the range holds %d of %d periods: %v", i, c, n, buckets)
		}
	}
}
