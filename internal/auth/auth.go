// Package auth creates accounts and checks passwords.
package auth

import (
	"context"
	"errors"
	"net/mail"
	"strings"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// Cost is the bcrypt cost of new password hashes.
const Cost = 11

// MinPasswordLen is the shortest password accepted.
const MinPasswordLen = 10

// Accounts manages users.
type Accounts struct {
	store *store.Store
	cost  int
	// dummy is compared against when the user does not exist, so a login
	// for an unknown email takes as long as one with a wrong password.
	dummy []byte
}

// New returns Accounts; cost 0 means Cost (tests pass bcrypt.MinCost).
func New(st *store.Store, cost int) *Accounts {
	if cost == 0 {
		cost = Cost
	}
	dummy, _ := bcrypt.GenerateFromPassword([]byte("seatd-timing-equalizer"), cost)
	return &Accounts{store: st, cost: cost, dummy: dummy}
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

// Create adds a user to an organization.
func (a *Accounts) Create(ctx context.Context, org uuid.UUID, email, password, role string) (store.User, error) {
	e, err := NormalizeEmail(email)
	if err != nil {
		return store.User{}, err
	}
	if len(password) < MinPasswordLen || len(password) > 72 {
		return store.User{}, &apperr.Error{Code: apperr.Invalid, Message: "choose a password of 10 to 72 characters",
			Fields: map[string]string{"password": "must be 10 to 72 characters"}}
	}
	switch role {
	case "buyer", "organizer", "box_office":
	default:
		return store.User{}, &apperr.Error{Code: apperr.Invalid, Message: "unknown role",
			Fields: map[string]string{"role": "must be buyer, organizer or box_office"}}
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), a.cost)
	if err != nil {
		return store.User{}, err
	}
	return a.store.CreateUser(ctx, org, e, role, string(hash))
}

// Authenticate checks an organization slug, email and password. Every
// failure is the same Unauthorized error, so the answer tells nothing
// about which part was wrong.
func (a *Accounts) Authenticate(ctx context.Context, orgSlug, email, password string) (store.Org, store.User, error) {
	bad := apperr.E(apperr.Unauthorized, "organization, email or password is wrong")
	org, err := a.store.OrgBySlug(ctx, strings.ToLower(strings.TrimSpace(orgSlug)))
	if err != nil && !errors.Is(err, apperr.ErrNotFound) {
		return store.Org{}, store.User{}, err
	}
	var u store.User
	if err == nil {
		u, err = a.store.UserByEmail(ctx, org.ID, strings.ToLower(strings.TrimSpace(email)))
		if err != nil && !errors.Is(err, apperr.ErrNotFound) {
			return store.Org{}, store.User{}, err
		}
	}
	if err != nil {
		_ = bcrypt.CompareHashAndPassword(a.dummy, []byte(password))
		return store.Org{}, store.User{}, bad
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return store.Org{}, store.User{}, bad
	}
	return org, u, nil
}
