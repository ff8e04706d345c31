package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"seatd/internal/auth"
)

// SignIns is a sign-in surge (issue: an on-sale's opening minute): Total
// accounts, their passwords hashed at seatd's own bcrypt cost, sign in
// through POST /login Conns at a time; every refusal (429, 503) is
// honoured by waiting what its Retry-After says, then the sign-in is sent
// again, until it succeeds. Meanwhile buyers hold in a closed loop; the
// same holds without the surge, right before, are the reference.
type SignIns struct {
	// Slots is the process's password-hashing slots
	// (SEATD_MAX_PASSWORD_HASHES).
	Slots     int     `json:"hashing_slots"`
	Total     int     `json:"sign_ins"`
	Conns     int     `json:"concurrent"`
	Cost      int     `json:"bcrypt_cost"`
	Succeeded int     `json:"succeeded"`
	Failed    int     `json:"failed"` // not signed in within the phase's bound
	Seconds   float64 `json:"seconds"`
	PerSec    float64 `json:"sign_ins_per_s"`
	// SignIn is each sign-in from its first request's start to the answer
	// that signed it in, refusals and the waits they asked for included;
	// Attempt is every request, each from its own start.
	SignIn  Latency `json:"sign_in"`
	Attempt Latency `json:"attempt"`
	// Refusals by status; those without a Retry-After (waited 1 s).
	Refusals     map[string]int `json:"refusals"`
	NoRetryAfter int            `json:"refusals_without_retry_after"`
	// Holds while the surge runs and, right before, without it; Outlasted
	// says the surge ended before the holds' window did.
	Holds     *Load `json:"holds_during_surge"`
	HoldsRef  *Load `json:"holds_without_surge"`
	Outlasted bool  `json:"surge_ended_before_window,omitempty"`
}

// phaseSignIn runs the surge once per setting of the hashing slots
// (-sign-in-slots), each on a fresh process with its own accounts, event
// and reference; the report's main figures are those of the slots seatd
// ships with (auth.DefaultHashing), the others are beside them.
func (b *bench) phaseSignIn(ctx context.Context) error {
	b.procs.stopNamed("main", "fallback", "live", "expiry", "waitlist", "door", "room", "pay-off", "pay-on")
	hash, err := bcrypt.GenerateFromPassword([]byte(benchPassword), auth.Cost)
	if err != nil {
		return err
	}
	shipped := auth.DefaultHashing()
	for _, slots := range b.cfg.signInSlots {
		si, err := b.signInSurge(ctx, slots, string(hash))
		if err != nil {
			return err
		}
		b.rep.SignInSlots = append(b.rep.SignInSlots, si)
		if slots == shipped {
			b.rep.SignIns = si
		}
		if si.Failed > 0 {
			return fmt.Errorf("%d of %d sign-ins never succeeded with %d hashing slots", si.Failed, si.Total, slots)
		}
	}
	if b.rep.SignIns == nil {
		return fmt.Errorf("-sign-in-slots %v leaves out the shipped default %d", b.cfg.signInSlots, shipped)
	}
	return nil
}

// signInSurge is one surge on a fresh process with slots hashing slots.
func (b *bench) signInSurge(ctx context.Context, slots int, hash string) (*SignIns, error) {
	si := &SignIns{Slots: slots, Total: b.cfg.signIns, Conns: 32, Cost: auth.Cost, Refusals: map[string]int{}}
	rows, err := b.db.Query(ctx, `
		INSERT INTO users (org_id, email, role, password_hash, email_verified_at)
		SELECT $1, 'surge' || g || '-' || $5 || '-' || extract(epoch FROM now())::bigint || '@' || $2 || '.example', 'buyer', $3, now()
		FROM generate_series(1, $4) g RETURNING email`, b.fx.orgID, b.fx.slug, hash, si.Total, strconv.Itoa(slots))
	if err != nil {
		return nil, err
	}
	var emails []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			rows.Close()
			return nil, err
		}
		emails = append(emails, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// The process's own limits as shipped but the slots; only the
	// per-address sign-in rate is out of the way, as for every bench
	// process, since the whole surge comes from one address.
	s, err := b.procs.start(ctx, fmt.Sprintf("signin-%d", slots), map[string]string{"SEATD_MAX_PASSWORD_HASHES": strconv.Itoa(slots)})
	if err != nil {
		return nil, err
	}
	defer b.procs.stop(s)
	holders := b.fx.buyers[:min(32, len(b.fx.buyers))]
	ev, seats, err := b.fx.newEvent(ctx, fmt.Sprintf("sign-in surge, %d slots", slots), b.cfg.eventSeats, false)
	if err != nil {
		return nil, err
	}
	if err := b.load.warm(ctx, []*server{s}, ev); err != nil {
		return nil, err
	}
	half := len(seats) / 2
	si.HoldsRef = b.load.closedLoop(ctx, []*server{s}, holders, ev, seats[:half], b.cfg.warmup, b.cfg.duration, nil)
	var surgeEnd time.Time
	winEnd := time.Now().Add(b.cfg.warmup + b.cfg.duration)
	si.Holds = b.load.closedLoop(ctx, []*server{s}, holders, ev, seats[half:], b.cfg.warmup, b.cfg.duration, func(ctx context.Context) {
		si.surge(ctx, s, b.fx.slug, emails)
		surgeEnd = time.Now()
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	si.Outlasted = surgeEnd.Before(winEnd)
	b.log.printf("signin, %d hashing slots: %d of %d signed in, %.1f/s, p99 %.0f ms, refusals %v (%d without Retry-After); holds p99 %.1f ms during, %.1f ms without",
		slots, si.Succeeded, si.Total, si.PerSec, si.SignIn.P99, si.Refusals, si.NoRetryAfter, si.Holds.Latency.P99, si.HoldsRef.Latency.P99)
	return si, nil
}

// surge signs every account in, Conns at a time, honouring refusals'
// Retry-After; a sign-in still refused 3 minutes after the surge began
// counts as failed.
func (si *SignIns) surge(ctx context.Context, s *server, org string, emails []string) {
	hc := &http.Client{Transport: s.http.Transport, Timeout: 30 * time.Second}
	giveUp := time.Now().Add(3 * time.Minute)
	var mu sync.Mutex
	var signIns, attempts []float64
	start := time.Now()
	_ = parallel(ctx, si.Conns, len(emails), func(i int) error {
		body, _ := json.Marshal(map[string]string{"org": org, "email": emails[i], "password": benchPassword})
		first := time.Now()
		for ctx.Err() == nil {
			t := time.Now()
			code, retry, err := signIn(ctx, hc, s, body)
			d := ms(time.Since(t))
			mu.Lock()
			attempts = append(attempts, d)
			switch {
			case err == nil && code == http.StatusOK:
				si.Succeeded++
				signIns = append(signIns, ms(time.Since(first)))
				mu.Unlock()
				return nil
			case err == nil && (code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable):
				si.Refusals[strconv.Itoa(code)]++
				if retry < 0 {
					si.NoRetryAfter++
					retry = 1
				}
			default:
				si.Refusals[statusName(code)]++
				retry = 1
			}
			mu.Unlock()
			if time.Now().Add(time.Duration(retry) * time.Second).After(giveUp) {
				break
			}
			sleepUntil(ctx, time.Now().Add(time.Duration(retry)*time.Second))
		}
		mu.Lock()
		si.Failed++
		mu.Unlock()
		return nil
	})
	si.Seconds = round3(time.Since(start).Seconds())
	si.PerSec = round3(float64(si.Succeeded) / si.Seconds)
	si.SignIn, si.Attempt = latencyOf(signIns), latencyOf(attempts)
}

// signIn sends one POST /login and answers its status and Retry-After in
// seconds (-1: none).
func signIn(ctx context.Context, hc *http.Client, s *server, body []byte) (int, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/login", bytes.NewReader(body))
	if err != nil {
		return 0, -1, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, -1, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	retry := -1
	if v := resp.Header.Get("Retry-After"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			retry = n
		}
	}
	return resp.StatusCode, retry, nil
}
