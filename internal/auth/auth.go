// Package auth creates accounts, checks passwords, and disables accounts
// or changes their roles, ending their sessions everywhere.
package auth

import (
	"context"
	"errors"
	"net/mail"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// Cost is the bcrypt cost of new password hashes.
const Cost = 11

// MinPasswordLen is the shortest password accepted.
const MinPasswordLen = 10

// hashWait is how long a sign-in waits in line for a hashing slot before
// it is refused: a surge of sign-ins (an on-sale's opening minute) is
// served in turn within it rather than refused, while the line's length
// (hashQueuePerSlot) keeps a flood from piling up behind it.
const hashWait = 10 * time.Second

// hashQueuePerSlot is how many sign-ins may wait per hashing slot; one
// more is refused at once. A hash takes 100-200 ms of a busy core at
// Cost, so a full line drains within hashWait. The line holds a surge of
// 32 sign-ins at once on one slot: with a shorter one (8), a surge of
// 1 000 sign-ins 32 at a time left some of them refused again and again
// for over a minute (make bench, phase signin), while waiting costs
// nothing but a goroutine.
const hashQueuePerSlot = 32

// busyRetry is the Retry-After of ErrBusy, in seconds.
const busyRetry = 2

// busyError is ErrBusy: unavailable, with when to try again.
type busyError struct{ err *apperr.Error }

func (e busyError) Error() string { return e.err.Error() }
func (e busyError) Unwrap() error { return e.err }

// RetryAfter says when to try again, in seconds (web/httpx sets the
// Retry-After header from it).
func (busyError) RetryAfter() int { return busyRetry }

// ErrBusy is the answer when every password-hashing slot is taken and
// the line for them is full or did not move within hashWait.
var ErrBusy error = busyError{apperr.E(apperr.Unavailable, "too many sign-ins at once; please try again in a moment")}

// Accounts manages users.
type Accounts struct {
	store *store.Accounts
	// tokens keeps the verification and reset tokens mailed to users.
	tokens *store.Tokens
	cost   int
	// publicURL starts the links mailed to users (SEATD_PUBLIC_URL).
	publicURL string
	// inviteFor is how long an invitation's link works (SetInviteFor).
	inviteFor time.Duration
	// dummy is compared against when the user does not exist, so a login
	// for an unknown email takes as long as one with a wrong password.
	dummy []byte
	// hashing has one token per password hash allowed to run at once.
	// bcrypt is CPU-bound: beyond a few per core, more hashes at once only
	// make every one of them slower, and a flood of sign-ins would starve
	// hold requests of CPU.
	hashing chan struct{}
	// waiting counts the sign-ins waiting for a slot.
	waiting atomic.Int64
}

// New returns Accounts; cost 0 means Cost (tests pass bcrypt.MinCost).
// The links it mails start with publicURL. At most DefaultHashing
// passwords are hashed at once; see LimitHashing.
func New(st *store.Accounts, tokens *store.Tokens, cost int, publicURL string) *Accounts {
	if cost == 0 {
		cost = Cost
	}
	dummy, _ := bcrypt.GenerateFromPassword([]byte("seatd-timing-equalizer"), cost)
	return &Accounts{store: st, tokens: tokens, cost: cost, publicURL: strings.TrimRight(publicURL, "/"), dummy: dummy,
		inviteFor: DefaultInviteFor,
		hashing:   make(chan struct{}, DefaultHashing())}
}

// DefaultHashing is the default cap on concurrent password hashes: half
// the CPUs the process may use, at least one. bcrypt is all CPU, so more
// hashes at once do not sign people in faster once the cores are busy —
// they take the cores the holds need: in a surge of sign-ins, measured
// on two cores (make bench, phase signin), two slots per CPU made the
// holds' p99 several times what it was without the surge, one slot
// about a third more, for the same sign-ins a second.
func DefaultHashing() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// LimitHashing sets how many password hashes may run at once (n <= 0
// keeps the default). Call it before the accounts are used.
func (a *Accounts) LimitHashing(n int) {
	if n > 0 {
		a.hashing = make(chan struct{}, n)
	}
}

// hash runs f in a hashing slot, or returns ErrBusy when the line for
// one is full or no slot frees up within hashWait.
func (a *Accounts) hash(ctx context.Context, f func()) error {
	select {
	case a.hashing <- struct{}{}:
	default:
		if a.waiting.Add(1) > int64(hashQueuePerSlot*cap(a.hashing)) {
			a.waiting.Add(-1)
			return ErrBusy
		}
		defer a.waiting.Add(-1)
		t := time.NewTimer(hashWait)
		defer t.Stop()
		select {
		case a.hashing <- struct{}{}:
		case <-t.C:
			return ErrBusy
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() { <-a.hashing }()
	f()
	return nil
}

// NormalizeEmail lower-cases and trims an email and checks its shape.
func NormalizeEmail(email string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(email))
	addr, err := mail.ParseAddress(e)
	if err != nil || addr.Address != e || len(e) > 254 {
		return "", &apperr.Error{Code: apperr.Invalid, Message: "enter a valid email address",
			Fields: map[string]string{"email": "is not a valid email address"}}
	}
	return e, nil
}

// Create adds a user to an organization whose address the caller vouches
// for (the command line, the demo seed, tests): the account is verified.
// Buyers who sign up themselves go through Signup.
func (a *Accounts) Create(ctx context.Context, org uuid.UUID, email, password, role string) (store.User, error) {
	e, err := NormalizeEmail(email)
	if err != nil {
		return store.User{}, err
	}
	if err := checkRole(role); err != nil {
		return store.User{}, err
	}
	hash, err := a.hashPassword(ctx, password)
	if err != nil {
		return store.User{}, err
	}
	return a.store.CreateUser(ctx, org, e, role, hash)
}

// checkPassword refuses a password too short or longer than bcrypt reads.
func checkPassword(password string) error {
	if len(password) < MinPasswordLen || len(password) > 72 {
		return &apperr.Error{Code: apperr.Invalid, Message: "choose a password of 10 to 72 characters",
			Fields: map[string]string{"password": "must be 10 to 72 characters"}}
	}
	return nil
}

// hashPassword checks a new password and hashes it in a hashing slot.
func (a *Accounts) hashPassword(ctx context.Context, password string) (string, error) {
	if err := checkPassword(password); err != nil {
		return "", err
	}
	var hash []byte
	var err error
	if herr := a.hash(ctx, func() { hash, err = bcrypt.GenerateFromPassword([]byte(password), a.cost) }); herr != nil {
		return "", herr
	}
	return string(hash), err
}

func checkRole(role string) error {
	switch role {
	case "buyer", "organizer", "box_office", "door":
		return nil
	}
	return &apperr.Error{Code: apperr.Invalid, Message: "unknown role",
		Fields: map[string]string{"role": "must be buyer, organizer, box_office or door"}}
}

// Authenticate checks an organization slug, email and password. Every
// failure is the same Unauthorized error, so the answer tells nothing
// about which part was wrong; only the right password of a disabled
// account learns that it is disabled. ErrBusy means no hashing slot was
// free: nothing was checked.
func (a *Accounts) Authenticate(ctx context.Context, orgSlug, email, password string) (store.Org, store.User, error) {
	bad := apperr.E(apperr.Unauthorized, "organization, email or password is wrong")
	org, err := a.store.OrgBySlug(ctx, strings.ToLower(strings.TrimSpace(orgSlug)))
	if err != nil && !errors.Is(err, apperr.ErrNotFound) {
		return store.Org{}, store.User{}, err
	}
	var u store.Account
	if err == nil {
		u, err = a.store.AccountByEmail(ctx, org.ID, strings.ToLower(strings.TrimSpace(email)))
		if err != nil && !errors.Is(err, apperr.ErrNotFound) {
			return store.Org{}, store.User{}, err
		}
	}
	hash := a.dummy
	if err == nil {
		hash = []byte(u.PasswordHash)
	}
	var mismatch error
	if herr := a.hash(ctx, func() { mismatch = bcrypt.CompareHashAndPassword(hash, []byte(password)) }); herr != nil {
		return store.Org{}, store.User{}, herr
	}
	if err != nil || mismatch != nil {
		return store.Org{}, store.User{}, bad
	}
	if u.Disabled {
		return store.Org{}, store.User{}, apperr.E(apperr.Unauthorized, "this account is disabled")
	}
	return org, u.User, nil
}

// Current reports whether a signed-in user is still who the session says:
// not disabled, and with the role the session was given. A session that
// is not current must end.
func (a *Accounts) Current(ctx context.Context, org, user uuid.UUID, role string) (bool, error) {
	u, err := a.store.AccountByID(ctx, org, user)
	if errors.Is(err, apperr.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return !u.Disabled && u.Role == role, nil
}

// Disable disables a user of org (found by email) and deletes every
// session of theirs, which announces their end to every process (see
// web's sessionEnds): their next request is signed out and their sockets
// close everywhere. A disabled user cannot sign in.
func (a *Accounts) Disable(ctx context.Context, org uuid.UUID, email string) (store.UserChange, error) {
	e, err := NormalizeEmail(email)
	if err != nil {
		return store.UserChange{}, err
	}
	return a.store.DisableUser(ctx, org, e)
}

// ChangeRole gives a user of org (found by email) a new role. Their
// sessions end everywhere, as by Disable: a session keeps the role it was
// signed in with, and ending it is simpler and safer than rewriting every
// session and socket in flight. They sign in again with the new role.
func (a *Accounts) ChangeRole(ctx context.Context, org uuid.UUID, email, role string) (store.UserChange, error) {
	e, err := NormalizeEmail(email)
	if err != nil {
		return store.UserChange{}, err
	}
	if err := checkRole(role); err != nil {
		return store.UserChange{}, err
	}
	return a.store.SetUserRole(ctx, org, e, role)
}
