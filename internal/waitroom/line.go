// Package waitroom is the waiting room in front of a busy event's seat
// map (docs/waiting-room.md): the line of visitors in Redis, the
// admitter that lets them through at the organizer's rate (or the rate
// the hold latency allows), and the signed admission a visitor carries
// to the map. Every key of an event's line sits under the event's hash
// tag, {org:event}, as the seat locks do (internal/seatlock), so each
// script touches one Redis Cluster slot and every process serves one
// line. The line knows nothing of HTTP or Postgres.
package waitroom

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Room is an event's waiting room as the organizer set it.
type Room struct {
	Org, Event uuid.UUID
	// OpensAt is the opening: who joins before it gets a place drawn at
	// random among everyone who joined before it.
	OpensAt time.Time
	// RatePerMinute is how many visitors are let through a minute; 0 is
	// automatic (see AIMD).
	RatePerMinute int
}

// State is where a visitor stands.
type State string

// The states of a visitor.
const (
	// BeforeOpening: in line, the place not drawn yet (it is at the
	// opening, by lottery among everyone in line).
	BeforeOpening State = "before_opening"
	Waiting       State = "waiting"
	Admitted      State = "admitted"
	// NotInLine: Place of a visitor who never joined (or whose admission
	// lapsed).
	NotInLine State = "not_in_line"
)

// Place is a visitor's place in line and what is known of the line.
type Place struct {
	State State
	// Position is the 1-based place in line (0 unless Waiting); Ahead the
	// visitors before it.
	Position, Ahead int64
	// InLine is how many visitors wait.
	InLine int64
	// AdmittedPerMinute is the admissions of the last minute, measured.
	AdmittedPerMinute int64
	// ETA is the expected wait: from the measured admissions, or the set
	// rate while none was measured yet; negative when unknown. Before the
	// opening it is the time to the opening.
	ETA     time.Duration
	OpensAt time.Time

	// number is a waiting visitor's place counted from the line's first
	// admission (its rank plus the admissions so far), under the line's
	// epoch: what Places answers later places from.
	number int64
	epoch  uint64
}

// Line is the waiting lines of every event, in Redis.
type Line struct {
	rdb    redis.Cmdable
	prefix string
	// admitTTL is how long an admission counts in Redis: a visitor
	// admitted within it who joins again is told "admitted" (ten tabs,
	// one place), and the admissions within it count against the seats
	// left (Admitter).
	admitTTL time.Duration
	draw     func() float64
}

// NewLine returns the lines on rdb under the key prefix (SEATD_KEY_PREFIX).
// admitTTL is how long an admission is valid before it must be renewed
// (Passes' ttl); at least a minute, since the measured rate counts the
// admissions of the last minute.
func NewLine(rdb redis.Cmdable, prefix string, admitTTL time.Duration) *Line {
	return &Line{rdb: rdb, prefix: prefix, admitTTL: max(admitTTL, time.Minute), draw: lotteryDraw}
}

// lotteryDraw is a uniform draw in [0, 1) from the operating system's
// generator: the order of the line must not be predictable from earlier
// draws.
func lotteryDraw() float64 {
	var b [8]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	return float64(binary.BigEndian.Uint64(b[:])>>11) / (1 << 53)
}

// newEpoch names a new line: random, so a line cleared and started again
// is not taken for the one before it.
func newEpoch() uint64 {
	var b [8]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	// Never 0, which is "no epoch".
	return binary.BigEndian.Uint64(b[:]) | 1
}

// keys are the Redis keys of one event's line.
type keys struct {
	line     string // ZSET: visitors waiting, by score (the draw, or 1 + arrival after the opening)
	admitted string // ZSET: visitors admitted, score = admitted at (ms)
	state    string // HASH: the admitter's bucket (last, credit), its rate, the admitted count, the line's epoch
	seq      string // STRING: arrivals after the opening
	lease    string // STRING: the admitter holding the event (owner), PX
}

func (l *Line) keys(org, event uuid.UUID) keys {
	base := l.prefix + ":{" + org.String() + ":" + event.String() + "}:wr:"
	return keys{line: base + "line", admitted: base + "admitted", state: base + "state", seq: base + "seq", lease: base + "lease"}
}

// placeScript finds (and with ARGV[2] = 1 takes) a visitor's place. A
// visitor admitted within ARGV[5] ms is admitted; one in line keeps the
// place it has, whatever the number of joins (one place per visitor).
// A newcomer before the opening gets the score ARGV[4], a draw in [0, 1):
// at the opening the line's order is the order of the draws, a lottery.
// After the opening a newcomer's score is 1 + its arrival number, behind
// every drawn place. Redis's clock decides before or after, so every
// process agrees. The first join of a line names it with ARGV[7] (its
// epoch), so a line cleared or lost and started again is told from the
// old one. Reply: state (0 before opening, 1 waiting, 2 admitted, 3 not
// in line), rank, waiting, admitted in the last minute, the admitter's
// current rate, now (ms), admitted since the line began, the epoch. A
// join keeps the line ARGV[6] ms more (a line before its opening has no
// admitter ticking yet).
var placeScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local opens = tonumber(ARGV[3])
local perMin = redis.call('ZCOUNT', KEYS[2], now - 60000, '+inf')
local st = redis.call('HMGET', KEYS[3], 'rate', 'admitted', 'epoch')
local rate, total, epoch = st[1] or '0', st[2] or '0', st[3] or '0'
local at = redis.call('ZSCORE', KEYS[2], ARGV[1])
if at and tonumber(at) > now - tonumber(ARGV[5]) then
  return {2, 0, redis.call('ZCARD', KEYS[1]), perMin, rate, now, total, epoch}
end
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s then
  if ARGV[2] ~= '1' then return {3, 0, redis.call('ZCARD', KEYS[1]), perMin, rate, now, total, epoch} end
  if now < opens then s = ARGV[4] else s = 1 + redis.call('INCR', KEYS[4]) end
  redis.call('ZADD', KEYS[1], s, ARGV[1])
  if redis.call('HSETNX', KEYS[3], 'epoch', ARGV[7]) == 1 then epoch = ARGV[7] end
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
  redis.call('PEXPIRE', KEYS[4], ARGV[6])
  if redis.call('PTTL', KEYS[3]) < tonumber(ARGV[6]) then redis.call('PEXPIRE', KEYS[3], ARGV[6]) end
end
local state = 1
if now < opens then state = 0 end
return {state, redis.call('ZRANK', KEYS[1], ARGV[1]), redis.call('ZCARD', KEYS[1]), perMin, rate, now, total, epoch}
`)

// Join puts visitor in room's line (or finds the place it has) and says
// where it stands. visitor names one place: the caller passes the same
// name for every tab of a session (and of an account).
func (l *Line) Join(ctx context.Context, room Room, visitor string) (Place, error) {
	return l.place(ctx, room, visitor, true)
}

// Place says where visitor stands without joining.
func (l *Line) Place(ctx context.Context, room Room, visitor string) (Place, error) {
	return l.place(ctx, room, visitor, false)
}

func (l *Line) place(ctx context.Context, room Room, visitor string, join bool) (Place, error) {
	k := l.keys(room.Org, room.Event)
	joinArg := "0"
	if join {
		joinArg = "1"
	}
	res, err := placeScript.Run(ctx, l.rdb, []string{k.line, k.admitted, k.state, k.seq}, visitor, joinArg,
		room.OpensAt.UnixMilli(), strconv.FormatFloat(l.draw(), 'g', -1, 64), l.admitTTL.Milliseconds(),
		max(keep, time.Until(room.OpensAt)+keep).Milliseconds(), strconv.FormatUint(newEpoch(), 10)).Slice()
	if err != nil {
		return Place{}, fmt.Errorf("waitroom: place: %w", err)
	}
	if len(res) != 8 {
		return Place{}, fmt.Errorf("waitroom: place: unexpected reply %v", res)
	}
	state, rank, inLine, perMin := res[0].(int64), res[1].(int64), res[2].(int64), res[3].(int64)
	rate, _ := strconv.ParseFloat(fmt.Sprint(res[4]), 64)
	now := time.UnixMilli(res[5].(int64))
	total, _ := strconv.ParseInt(fmt.Sprint(res[6]), 10, 64)
	epoch, _ := strconv.ParseUint(fmt.Sprint(res[7]), 10, 64)
	p := Place{InLine: inLine, AdmittedPerMinute: perMin, ETA: -1, OpensAt: room.OpensAt}
	switch state {
	case 0:
		// The draw decides the order at the opening: a place shown now
		// would only invite new sessions to try for a better one.
		p.State, p.ETA = BeforeOpening, room.OpensAt.Sub(now)
	case 1:
		p.State, p.Position, p.Ahead = Waiting, rank+1, rank
		p.ETA = eta(rank+1, perMin, rateOf(room, rate))
		// Only the head of the line leaves it after the opening, so the
		// visitor's place is this number less the admissions since.
		p.number, p.epoch = rank+total, epoch
	case 2:
		p.State, p.ETA = Admitted, 0
	default:
		p.State = NotInLine
	}
	return p, nil
}

// rateOf is the rate the admitter lets visitors through at: the set one,
// or the automatic one it last used.
func rateOf(room Room, auto float64) float64 {
	if room.RatePerMinute > 0 {
		return float64(room.RatePerMinute)
	}
	return auto
}

// eta is how long n visitors take to be admitted: at the rate measured
// over the last minute, or, when nobody was admitted in it (the first
// minute, a paused line), at the rate the admitter is set to; negative
// when neither is known.
func eta(n, measured int64, rate float64) time.Duration {
	perMin := float64(measured)
	if perMin <= 0 {
		perMin = rate
	}
	if perMin <= 0 {
		return -1
	}
	return time.Duration(math.Ceil(float64(n)/perMin*60)) * time.Second
}

// Stats are a line's figures for its organizer.
type Stats struct {
	Waiting int64
	// AdmittedPerMinute is measured over the last minute; Admitted counts
	// every admission since the room opened.
	AdmittedPerMinute int64
	Admitted          int64
	// Rate is what the admitter lets through a minute now: the set rate,
	// or the automatic one.
	Rate float64
	// ClearIn is the expected time until nobody waits; negative when
	// unknown.
	ClearIn time.Duration
}

// Stats reads room's figures: the line's head, as Places reads it.
func (l *Line) Stats(ctx context.Context, room Room) (Stats, error) {
	h, err := l.head(ctx, room)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Waiting: h.waiting, AdmittedPerMinute: h.perMin, Admitted: h.admitted, Rate: rateOf(room, h.rate)}
	st.ClearIn = eta(st.Waiting, st.AdmittedPerMinute, st.Rate)
	if st.Waiting == 0 {
		st.ClearIn = 0
	}
	return st, nil
}

// Clear forgets room's line, admissions and admitter state: the room was
// turned off, and a room turned on again starts a new line.
func (l *Line) Clear(ctx context.Context, org, event uuid.UUID) error {
	k := l.keys(org, event)
	return l.rdb.Del(ctx, k.line, k.admitted, k.state, k.seq, k.lease).Err()
}
