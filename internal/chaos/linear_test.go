package chaos

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/uuid"
)

// The linearizability check.
//
// Each seat is an object with a sequential specification: it is available,
// held by one user under one hold id until some time, or sold.
//
//	hold(u)             → created(h, until)  available → held(u, h, until)
//	                    → existing(h)        held(u, h, _) → unchanged
//	                    → taken              no change (see below)
//	release(u, h)       → ok                 held(u, h, _) → available
//	                    → notfound           the seat is not held under h
//	purchase(u, h)      → ok                 held(u, h, until > call) → sold
//	                    → expired            not held under h, or until passed
//
// Expiry is modelled, not avoided: the reaper may free a seat at any moment
// after its held_until (it expires rows with held_until < now()), so before
// each operation whose return comes after the seat's held_until the model
// also allows the seat to have become available. held_until comes from the
// hold's own answer and clients run on the same clock as Postgres, so this
// is sound whatever the TTL; a long TTL would only make it less interesting.
//
// Refusals ("taken") are checked in two ways. The lenient model accepts
// them in any state: the hold algorithm lets the hot cache and Redis refuse at once
// from a view that may trail Postgres by a few milliseconds, so a refusal is
// not a linearizable read and the engine does not promise it is. Every
// grant, release and sale is decided by Postgres and must linearize. The
// strict model also demands that a refusal saw the seat taken by someone
// else or sold; its failures count stale refusals, reported, not failed.
//
// Operations whose outcome the client never learned (timeouts, resets, 5xx,
// a process killed mid-request) are settled from Postgres afterwards: a
// hold by that user on that seat created during the call that no answer
// mentions was the call's doing; a release or purchase took effect if the
// hold ended that way. Such operations keep their call time and get an
// open-ended return, since their effect may land any time after the call.
// An unknown operation that left no trace had no effect and is dropped.

type seatStatus uint8

const (
	seatAvailable seatStatus = iota
	seatHeld
	seatSold
)

// seatModelState is the state of one seat; comparable, so == is equality.
type seatModelState struct {
	Status seatStatus
	User   uuid.UUID
	Hold   uuid.UUID
	Until  int64 // unix ms
}

type linInput struct {
	Kind   opKind
	User   uuid.UUID
	Hold   uuid.UUID // release, purchase
	CallMs int64
	RetMs  int64 // math.MaxInt64 when open-ended
}

type linOutput struct {
	Result result
	Hold   uuid.UUID // hold answers
	Until  int64
}

func seatModel(strict bool) porcupine.Model {
	nd := porcupine.NondeterministicModel{
		Init: func() []any { return []any{seatModelState{}} },
		Step: func(state, input, output any) []any {
			s := state.(seatModelState)
			in := input.(linInput)
			out := output.(linOutput)
			pre := []seatModelState{s}
			if s.Status == seatHeld && s.Until < in.RetMs {
				pre = append(pre, seatModelState{})
			}
			var next []any
			for _, p := range pre {
				if n, ok := stepSeat(p, in, out, strict); ok {
					next = append(next, n)
				}
			}
			return next
		},
		Equal: func(a, b any) bool { return a.(seatModelState) == b.(seatModelState) },
		DescribeOperation: func(input, output any) string {
			in, out := input.(linInput), output.(linOutput)
			s := fmt.Sprintf("%s(u=%s", in.Kind, in.User.String()[:4])
			if in.Hold != uuid.Nil {
				s += " h=" + in.Hold.String()[:4]
			}
			s += ") → " + out.Result.String()
			if out.Hold != uuid.Nil {
				s += " h=" + out.Hold.String()[:4]
			}
			return s
		},
		DescribeState: func(state any) string {
			s := state.(seatModelState)
			switch s.Status {
			case seatHeld:
				return fmt.Sprintf("held u=%s h=%s until %s", s.User.String()[:4], s.Hold.String()[:4],
					time.UnixMilli(s.Until).Format("15:04:05.000"))
			case seatSold:
				return "sold"
			}
			return "available"
		},
	}
	return nd.ToModel()
}

func stepSeat(s seatModelState, in linInput, out linOutput, strict bool) (seatModelState, bool) {
	mine := s.Status == seatHeld && s.User == in.User
	under := s.Status == seatHeld && s.Hold == in.Hold
	switch in.Kind {
	case opHold:
		switch out.Result {
		case resCreated:
			if s.Status == seatAvailable {
				return seatModelState{Status: seatHeld, User: in.User, Hold: out.Hold, Until: out.Until}, true
			}
		case resExisting:
			if mine && s.Hold == out.Hold {
				return s, true
			}
		case resTaken:
			if !strict || s.Status == seatSold || (s.Status == seatHeld && !mine) {
				return s, true
			}
		}
	case opRelease:
		switch out.Result {
		case resOK:
			if under && mine {
				return seatModelState{}, true
			}
		case resNotFound:
			if !under {
				return s, true
			}
		}
	case opPurchase:
		switch out.Result {
		case resOK:
			if under && mine && s.Until > in.CallMs {
				return seatModelState{Status: seatSold}, true
			}
		case resExpired, resNotFound:
			if !under || s.Until <= in.RetMs {
				return s, true
			}
		}
	}
	return s, false
}

// resolve settles unknown outcomes from Postgres (see above) and drops
// operations that had no effect on a seat's state.
func resolve(ops []op, holds map[uuid.UUID]holdRow) []op {
	acked := map[uuid.UUID]bool{}
	for _, o := range ops {
		// Only a 201 names the call that created a hold: a later 200 may
		// name a hold whose creating call timed out.
		if o.Kind == opHold && o.Result == resCreated {
			acked[o.Hold] = true
		}
	}
	// Holds nobody was told about, by seat and user, oldest first.
	orphans := map[[2]uuid.UUID][]holdRow{}
	for _, h := range holds {
		if !acked[h.ID] {
			k := [2]uuid.UUID{h.Seat, h.User}
			orphans[k] = append(orphans[k], h)
		}
	}
	for _, hs := range orphans {
		sort.Slice(hs, func(i, j int) bool { return hs[i].CreatedAt.Before(hs[j].CreatedAt) })
	}
	ackedRelease := map[uuid.UUID]bool{}
	// Purchases are retried under one Idempotency-Key: one sale, however
	// many calls. If one call was answered "ok", an unknown one of the same
	// hold is that same sale, not another; of several unknown ones, one is.
	ackedPurchase := map[uuid.UUID]bool{}
	for _, o := range ops {
		if o.Kind == opRelease && o.Result == resOK {
			ackedRelease[o.Hold] = true
		}
		if o.Kind == opPurchase && o.Result == resOK {
			ackedPurchase[o.Hold] = true
		}
	}
	sorted := slices.Clone(ops)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Call.Before(sorted[j].Call) })
	var out []op
	for _, o := range sorted {
		switch {
		case o.Result == resRefused:
			continue // a refusal that changes nothing
		case o.Result != resUnknown:
			out = append(out, o)
			continue
		}
		switch o.Kind {
		case opHold:
			k := [2]uuid.UUID{o.Seat, o.User}
			hs := orphans[k]
			// Created at the server's start of the request: within the call.
			i := slices.IndexFunc(hs, func(h holdRow) bool {
				return !h.CreatedAt.Before(o.Call.Add(-time.Millisecond))
			})
			if i < 0 {
				continue
			}
			h := hs[i]
			orphans[k] = slices.Delete(hs, i, i+1)
			o.Result, o.Hold, o.Until, o.Resolved = resCreated, h.ID, h.HeldUntil, true
		case opRelease:
			h, ok := holds[o.Hold]
			if !ok || h.Status != "released" || h.ReleasedBy != o.User || ackedRelease[o.Hold] ||
				(h.EndedAt != nil && h.EndedAt.Before(o.Call.Add(-time.Millisecond))) {
				continue
			}
			ackedRelease[o.Hold] = true
			o.Result, o.Resolved = resOK, true
		case opPurchase:
			h, ok := holds[o.Hold]
			if !ok || h.Status != "converted" || ackedPurchase[o.Hold] {
				continue
			}
			ackedPurchase[o.Hold] = true
			o.Result, o.Resolved = resOK, true
		}
		out = append(out, o)
	}
	return out
}

// linOps turns recorded operations into porcupine's.
func linOps(ops []op) []porcupine.Operation {
	out := make([]porcupine.Operation, 0, len(ops))
	for _, o := range ops {
		ret := o.Return.UnixNano()
		retMs := o.Return.UnixMilli()
		if o.Resolved {
			ret, retMs = math.MaxInt64, math.MaxInt64
		}
		in := linInput{Kind: o.Kind, User: o.User, Hold: o.Hold, CallMs: o.Call.UnixMilli(), RetMs: retMs}
		out1 := linOutput{Result: o.Result}
		if o.Kind == opHold {
			in.Hold = uuid.Nil
			out1.Hold, out1.Until = o.Hold, o.Until.UnixMilli()
		}
		out = append(out, porcupine.Operation{ClientId: o.Client, Input: in, Output: out1, Call: o.Call.UnixNano(), Return: ret})
	}
	return out
}

// linReport is the outcome of checking every seat's history.
type linReport struct {
	Seats, Ops       int
	Resolved         int
	Illegal          []string // seats whose history is not linearizable
	Unknown          int      // seats the checker gave up on (timeout)
	StaleRefusals    int      // seats only the strict model rejects
	VisualizationDir string
}

// checkLinearizable checks each seat's history on its own (seats are
// independent objects, so the whole history is linearizable iff each is).
func checkLinearizable(ops []op, holds map[uuid.UUID]holdRow, vizDir string) linReport {
	ops = resolve(ops, holds)
	bySeatOps := map[uuid.UUID][]op{}
	var rep linReport
	for _, o := range ops {
		if o.Resolved {
			rep.Resolved++
		}
		bySeatOps[o.Seat] = append(bySeatOps[o.Seat], o)
	}
	bySeat := map[uuid.UUID][]porcupine.Operation{}
	for seat, os := range bySeatOps {
		bySeat[seat] = linOps(os)
	}
	rep.Seats, rep.Ops = len(bySeat), len(ops)
	lenient, strict := seatModel(false), seatModel(true)
	for seat, hist := range bySeat {
		res, info := porcupine.CheckOperationsVerbose(lenient, hist, 10*time.Second)
		switch res {
		case porcupine.Illegal:
			rep.Illegal = append(rep.Illegal, seat.String())
			if vizDir != "" {
				path := filepath.Join(vizDir, "seat-"+seat.String()+".html")
				if f, err := os.Create(path); err == nil {
					_ = porcupine.Visualize(lenient, info, f)
					_ = f.Close()
					rep.VisualizationDir = vizDir
				}
			}
			continue
		case porcupine.Unknown:
			rep.Unknown++
			continue
		}
		if porcupine.CheckOperationsTimeout(strict, hist, 5*time.Second) == porcupine.Illegal {
			rep.StaleRefusals++
		}
	}
	sort.Strings(rep.Illegal)
	return rep
}

// describeSeat prints the end of the shortest prefix (by call time) of a
// seat's resolved history that is already not linearizable: the operations
// that broke it are among the last ones shown.
func describeSeat(ops []op, holds map[uuid.UUID]holdRow, seat string) string {
	var mine []op
	for _, o := range resolve(ops, holds) {
		if o.Seat.String() == seat {
			mine = append(mine, o)
		}
	}
	model := seatModel(false)
	lo, hi := 1, len(mine)
	for lo < hi {
		mid := (lo + hi) / 2
		if porcupine.CheckOperationsTimeout(model, linOps(mine[:mid]), 5*time.Second) == porcupine.Illegal {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	s := fmt.Sprintf(" (shortest failing prefix: %d of %d operations)", hi, len(mine))
	if hi > 0 {
		// The last operation of the prefix broke it: show its user's
		// history on the seat and the hold it names.
		last := mine[hi-1]
		if h, ok := holds[last.Hold]; ok {
			e := "-"
			if h.EndedAt != nil {
				e = h.EndedAt.Format("15:04:05.000")
			}
			s += fmt.Sprintf("\n  hold %s in postgres: %s, created %s, ended %s", h.ID.String()[:8], h.Status,
				h.CreatedAt.Format("15:04:05.000"), e)
		}
		var theirs []op
		for _, o := range mine[:hi] {
			if o.User == last.User {
				theirs = append(theirs, o)
			}
		}
		s += "\n  that user's operations on the seat:"
		for _, o := range theirs[max(0, len(theirs)-8):] {
			s += fmt.Sprintf("\n    [%s, %s] %s via %s %s", o.Call.Format("15:04:05.000"), o.Return.Format("15:04:05.000"), o, o.Node, o.Err)
		}
		s += "\n  the end of the prefix:"
	}
	for _, o := range mine[max(0, hi-15):hi] {
		ret := o.Return.Format("15:04:05.000")
		if o.Resolved {
			ret = "?"
		}
		s += fmt.Sprintf("\n  [%s, %s] %s via %s", o.Call.Format("15:04:05.000"), ret, o, o.Node)
		if o.Kind == opHold && o.Hold != uuid.Nil {
			s += " until " + o.Until.Format("15:04:05.000")
		}
	}
	return s
}

// TestSeatModel checks the model on small histories, legal and not.
func TestSeatModel(t *testing.T) {
	u1, u2 := uuid.New(), uuid.New()
	h1, h2 := uuid.New(), uuid.New()
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	long := at(60_000)
	hold := func(u uuid.UUID, from, to int, r result, h uuid.UUID, until time.Time) op {
		return op{User: u, Kind: opHold, Result: r, Hold: h, Until: until, Call: at(from), Return: at(to)}
	}
	rel := func(u, h uuid.UUID, from, to int, r result) op {
		return op{User: u, Kind: opRelease, Hold: h, Result: r, Call: at(from), Return: at(to)}
	}
	buy := func(u, h uuid.UUID, from, to int, r result) op {
		return op{User: u, Kind: opPurchase, Hold: h, Result: r, Call: at(from), Return: at(to)}
	}
	tests := []struct {
		name          string
		ops           []op
		legal, strict bool
	}{
		{"hold, release, hold by another", []op{
			hold(u1, 0, 10, resCreated, h1, long), rel(u1, h1, 20, 30, resOK), hold(u2, 40, 50, resCreated, h2, long),
		}, true, true},
		{"two holds at once", []op{
			hold(u1, 0, 10, resCreated, h1, long), hold(u2, 20, 30, resCreated, h2, long),
		}, false, false},
		{"overlapping calls may order either way", []op{
			hold(u1, 0, 30, resCreated, h1, long), rel(u1, h1, 35, 40, resOK), hold(u2, 10, 50, resCreated, h2, long),
		}, true, true},
		{"expiry frees the seat after held_until", []op{
			hold(u1, 0, 10, resCreated, h1, at(100)), hold(u2, 200, 210, resCreated, h2, long),
		}, true, true},
		{"but not before", []op{
			hold(u1, 0, 10, resCreated, h1, at(1000)), hold(u2, 200, 210, resCreated, h2, long),
		}, false, false},
		{"idempotent 200 names the live hold", []op{
			hold(u1, 0, 10, resCreated, h1, long), hold(u1, 20, 30, resExisting, h1, long),
		}, true, true},
		{"200 with a released hold", []op{
			hold(u1, 0, 10, resCreated, h1, long), rel(u1, h1, 20, 30, resOK), hold(u1, 40, 50, resExisting, h1, long),
		}, false, false},
		{"purchase after release", []op{
			hold(u1, 0, 10, resCreated, h1, long), rel(u1, h1, 20, 30, resOK), buy(u1, h1, 40, 50, resOK),
		}, false, false},
		{"purchase past held_until", []op{
			hold(u1, 0, 10, resCreated, h1, at(100)), buy(u1, h1, 200, 210, resOK),
		}, false, false},
		{"sold stays sold", []op{
			hold(u1, 0, 10, resCreated, h1, long), buy(u1, h1, 20, 30, resOK), hold(u2, 40, 50, resCreated, h2, long),
		}, false, false},
		{"release of an ended hold is notfound", []op{
			hold(u1, 0, 10, resCreated, h1, long), rel(u1, h1, 20, 30, resOK), rel(u1, h1, 40, 50, resNotFound),
		}, true, true},
		{"refusal of a free seat: stale, lenient only", []op{
			hold(u1, 0, 10, resCreated, h1, long), rel(u1, h1, 20, 30, resOK), hold(u2, 40, 50, resTaken, uuid.Nil, time.Time{}),
		}, true, false},
		{"a settled unknown hold lands any time after its call", []op{
			{User: u1, Kind: opHold, Result: resCreated, Hold: h1, Until: long, Call: at(0), Return: at(5), Resolved: true},
			hold(u2, 10, 20, resCreated, h2, long), rel(u2, h2, 30, 40, resOK), rel(u1, h1, 50, 60, resOK),
		}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hist := linOps(tt.ops)
			if got := porcupine.CheckOperations(seatModel(false), hist); got != tt.legal {
				t.Errorf("lenient model: linearizable = %v, want %v", got, tt.legal)
			}
			if got := porcupine.CheckOperations(seatModel(true), hist); got != tt.strict {
				t.Errorf("strict model: linearizable = %v, want %v", got, tt.strict)
			}
		})
	}
}

// dumpHistory writes every operation and hold to a file, for looking into a
// history porcupine rejected.
func dumpHistory(t testing.TB, path string, ops []op, holds map[uuid.UUID]holdRow) {
	b, err := json.MarshalIndent(map[string]any{"ops": ops, "holds": holds}, "", " ")
	if err == nil {
		err = os.WriteFile(path, b, 0o600)
	}
	if err != nil {
		t.Logf("dump history: %v", err)
		return
	}
	t.Logf("history written to %s", path)
}

// TestResolveRetriedPurchase: a purchase whose answer was lost (the
// Postgres restart fault) is retried later under the same Idempotency-Key
// and answered "ok"; Postgres shows the hold converted. That is one sale:
// settling the lost call as a second "ok" made an honest history
// unlinearizable. Two lost calls of one sale settle as one, too.
func TestResolveRetriedPurchase(t *testing.T) {
	u, seat, h := uuid.New(), uuid.New(), uuid.New()
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	ended := at(9_100)
	holds := map[uuid.UUID]holdRow{h: {ID: h, Seat: seat, User: u, Status: "converted", HeldUntil: at(15_000),
		CreatedAt: at(0), EndedAt: &ended}}
	op1 := func(kind opKind, r result, from, to int) op {
		return op{Seat: seat, User: u, Kind: kind, Hold: h, Until: at(15_000), Result: r, Call: at(from), Return: at(to)}
	}
	for _, tc := range []struct {
		name string
		ops  []op
	}{
		{"lost, then retried and answered", []op{
			op1(opHold, resCreated, 0, 30), op1(opPurchase, resUnknown, 30, 1_900),
			op1(opHold, resExisting, 9_000, 9_010), op1(opPurchase, resOK, 9_020, 9_080),
		}},
		{"lost twice", []op{
			op1(opHold, resCreated, 0, 30), op1(opPurchase, resUnknown, 30, 1_900),
			op1(opHold, resExisting, 9_000, 9_010), op1(opPurchase, resUnknown, 9_020, 9_080),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := checkLinearizable(tc.ops, holds, "")
			if len(rep.Illegal) > 0 || rep.Unknown > 0 {
				t.Fatalf("not linearizable: %+v", rep)
			}
		})
	}
}
