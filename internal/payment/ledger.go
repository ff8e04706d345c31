package payment

import (
	"context"
	"slices"
	"sync"
	"time"

	"seatd/internal/apperr"
)

// TestIntent is the test provider's record of one intent: everything its
// answers and events are derived from. It is plain data (JSON-friendly),
// so a Ledger may keep it in a column of the payment it belongs to.
type TestIntent struct {
	ID           string
	ClientSecret string
	PaymentID    string
	OrgID        string
	EventID      string
	AmountMinor  int64
	Currency     string // lower case
	Description  string
	Status       Status // as stored; see settled for the status at a time
	// Attempts counts card confirmations; each attempt's events have ids
	// of their own, so a second try after a decline is not a duplicate.
	Attempts       int
	FailureMessage string
	// SettlesAt is when a Processing intent (the delayed card) has
	// succeeded. The status at any time follows from it, so an answer
	// does not depend on the process that took the card still running.
	SettlesAt time.Time
	Created   time.Time
	Changed   time.Time // the last transition: its event's time
	Refunds   []TestRefund
}

// TestRefund is one refund of a TestIntent.
type TestRefund struct {
	ID             string
	RefundID       string // seatd's refund (metadata)
	IdempotencyKey string
	AmountMinor    int64
	Reason         string
	Created        time.Time
}

// settled is in as it stands at now: a Processing intent whose time has
// come has Succeeded (at SettlesAt).
func (in TestIntent) settled(now time.Time) TestIntent {
	if in.Status == Processing && !in.SettlesAt.IsZero() && !now.Before(in.SettlesAt) {
		in.Status = Succeeded
		in.Changed = in.SettlesAt
	}
	return in
}

// refunded is the total refunded so far.
func (in TestIntent) refunded() int64 {
	var sum int64
	for _, r := range in.Refunds {
		sum += r.AmountMinor
	}
	return sum
}

func (in TestIntent) clone() TestIntent {
	in.Refunds = slices.Clone(in.Refunds)
	return in
}

// Ledger keeps the test provider's intents. Its state must outlive the
// process for a delayed payment to be answered after a restart: the payment
// flow keeps it beside its payment (the payments table); MemoryLedger keeps
// it for one process (make run's demo, tests).
type Ledger interface {
	// AddIntent stores in unless an intent with its ID is stored already,
	// and answers the stored one either way.
	AddIntent(ctx context.Context, in TestIntent) (TestIntent, error)
	// Intent answers the stored intent; an error of code NotFound when
	// there is none.
	Intent(ctx context.Context, id string) (TestIntent, error)
	// UpdateIntent runs change on the stored intent with no other update
	// of it in between (a row lock, a mutex) and stores the result, unless
	// change fails: then nothing is stored and its error is returned.
	UpdateIntent(ctx context.Context, id string, change func(*TestIntent) error) (TestIntent, error)
}

// MemoryLedger is a Ledger in memory, safe for concurrent use.
type MemoryLedger struct {
	mu      sync.Mutex
	intents map[string]TestIntent
}

var _ Ledger = (*MemoryLedger)(nil)

// NewMemoryLedger returns an empty MemoryLedger.
func NewMemoryLedger() *MemoryLedger {
	return &MemoryLedger{intents: map[string]TestIntent{}}
}

// AddIntent implements Ledger.
func (l *MemoryLedger) AddIntent(_ context.Context, in TestIntent) (TestIntent, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.intents[in.ID]; ok {
		return old.clone(), nil
	}
	l.intents[in.ID] = in.clone()
	return in, nil
}

// Intent implements Ledger.
func (l *MemoryLedger) Intent(_ context.Context, id string) (TestIntent, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	in, ok := l.intents[id]
	if !ok {
		return TestIntent{}, errNoIntent
	}
	return in.clone(), nil
}

// UpdateIntent implements Ledger.
func (l *MemoryLedger) UpdateIntent(_ context.Context, id string, change func(*TestIntent) error) (TestIntent, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	in, ok := l.intents[id]
	if !ok {
		return TestIntent{}, errNoIntent
	}
	in = in.clone()
	if err := change(&in); err != nil {
		return TestIntent{}, err
	}
	l.intents[id] = in.clone()
	return in, nil
}

var errNoIntent = apperr.E(apperr.NotFound, "no such payment intent")
