package auth

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"seatd/internal/store"
)

// Why a session ended, as published.
const (
	EndLogout   = "logout"
	EndDisabled = "disabled"
	EndRole     = "role_changed"
)

// SessionEnd announces that sessions ended, so every process closes their
// live sockets and forgets its cached copies. Token names one session (as
// stored: hashed, never the cookie's value); Org and User name every
// session of a user. Expiry and idle timeouts are not announced: each
// socket keeps its session's deadline and checks the store when it comes,
// in whichever process it lives.
type SessionEnd struct {
	Token  string    `json:"token,omitempty"`
	Org    uuid.UUID `json:"org,omitzero"`
	User   uuid.UUID `json:"user,omitzero"`
	Reason string    `json:"reason"`
}

// Bus is what SessionEnds needs of the realtime bus.
type Bus interface {
	Publish(ctx context.Context, channel string, payload []byte) error
	Subscribe(channel string, h func([]byte), resync func()) (unsubscribe func())
}

// SessionEnds publishes and receives SessionEnd messages on one channel
// for every organization: a session's organization is not known from its
// token alone, and ends are rare.
type SessionEnds struct {
	bus     Bus
	channel string
}

// NewSessionEnds returns the session-end channel of the deployment whose
// keys start with keyPrefix.
func NewSessionEnds(bus Bus, keyPrefix string) *SessionEnds {
	return &SessionEnds{bus: bus, channel: keyPrefix + ":{sessions}:ended"}
}

// Publish announces e to every process, this one included.
func (s *SessionEnds) Publish(ctx context.Context, e SessionEnd) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := s.bus.Publish(ctx, s.channel, b); err != nil {
		return fmt.Errorf("publish session end: %w", err)
	}
	return nil
}

// Subscribe calls f with every SessionEnd published until the returned
// function is called. resync is called when messages may have been missed
// (the subscription was re-established).
func (s *SessionEnds) Subscribe(f func(SessionEnd), resync func()) (unsubscribe func()) {
	return s.bus.Subscribe(s.channel, func(b []byte) {
		var e SessionEnd
		if json.Unmarshal(b, &e) == nil {
			f(e)
		}
	}, resync)
}

// Disable disables a user of org (found by email), deletes every session
// of theirs and announces it, so their next request is signed out and
// their sockets close in every process. A disabled user cannot sign in.
func (a *Accounts) Disable(ctx context.Context, ends *SessionEnds, org uuid.UUID, email string) (store.UserChange, error) {
	e, err := NormalizeEmail(email)
	if err != nil {
		return store.UserChange{}, err
	}
	c, err := a.store.DisableUser(ctx, org, e)
	if err != nil {
		return c, err
	}
	return c, ends.Publish(ctx, SessionEnd{Org: org, User: c.User.ID, Reason: EndDisabled})
}

// ChangeRole gives a user of org (found by email) a new role. Their
// sessions end everywhere, as by Disable: a session keeps the role it was
// signed in with, and ending it is simpler and safer than rewriting every
// session and socket in flight. They sign in again with the new role.
func (a *Accounts) ChangeRole(ctx context.Context, ends *SessionEnds, org uuid.UUID, email, role string) (store.UserChange, error) {
	e, err := NormalizeEmail(email)
	if err != nil {
		return store.UserChange{}, err
	}
	if err := checkRole(role); err != nil {
		return store.UserChange{}, err
	}
	c, err := a.store.SetUserRole(ctx, org, e, role)
	if err != nil {
		return c, err
	}
	return c, ends.Publish(ctx, SessionEnd{Org: org, User: c.User.ID, Reason: EndRole})
}
