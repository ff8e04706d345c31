package auth

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/store"
	"seatd/views/email"
)

// DefaultInviteFor is how long an invitation's link works unless
// SetInviteFor says otherwise (SEATD_INVITE_TTL).
const DefaultInviteFor = 7 * 24 * time.Hour

// SetInviteFor sets how long invitations' links work (d <= 0 keeps the
// default). Call it before the accounts are used.
func (a *Accounts) SetInviteFor(d time.Duration) {
	if d > 0 {
		a.inviteFor = d
	}
}

// Invite invites email to org on behalf of the organizer by: the
// invitation and its mail are written in one transaction. Its answer and
// its mail are the same whether or not the address has an account (the
// link then confirms that account). A pending invitation of the same
// address is replaced; past the organization's quota of pending
// invitations it is refused (409).
func (a *Accounts) Invite(ctx context.Context, org store.Org, by uuid.UUID, address string) (store.Invitation, error) {
	e, err := NormalizeEmail(address)
	if err != nil {
		return store.Invitation{}, err
	}
	var inv store.Invitation
	err = a.store.InTx(ctx, func(tx pgx.Tx) error {
		token, hash := newToken()
		var err error
		if inv, err = a.tokens.CreateInvitation(ctx, tx, org.ID, by, e, hash, a.inviteFor); err != nil {
			return err
		}
		link := linkTo(a.publicURL, "/invitations/accept", token)
		return a.enqueue(ctx, tx, org, store.User{Email: e}, "You are invited to "+org.Name, "invite:"+inv.ID.String(),
			email.Layout{Org: org.Name, Title: "You are invited", Preheader: "Choose a password, and you can choose seats.",
				Footer: "You get this mail because an organizer of " + org.Name + " invited this address."},
			email.Invitation(org.Name, link, validFor(a.inviteFor)))
	})
	return inv, err
}

// Invitations lists org's invitations, newest first.
func (a *Accounts) Invitations(ctx context.Context, org uuid.UUID) ([]store.Invitation, error) {
	return a.tokens.Invitations(ctx, org)
}

// RevokeInvitation withdraws a pending invitation of org.
func (a *Accounts) RevokeInvitation(ctx context.Context, org, id uuid.UUID) error {
	return a.tokens.RevokeInvitation(ctx, org, id)
}

// Invited reads the pending invitation of an emailed link's token, and
// its organization, without spending it; NotFound when it is not pending.
func (a *Accounts) Invited(ctx context.Context, token string) (store.Invitation, store.Org, error) {
	return a.tokens.InvitationByToken(ctx, hashToken(token))
}

// AcceptInvitation spends an invitation's token: its address gets a
// verified buyer account of the invitation's organization with password,
// whatever the organization's sign-up policy. If the address has an
// account there already, that account is verified and its password left
// as it is (the link proves the address, not the wish to change a
// password: that is a reset's). Either way the work and the answer are
// the same. NotFound for a token unknown, used, revoked or expired.
func (a *Accounts) AcceptInvitation(ctx context.Context, token, password string) (store.TokenUser, error) {
	// The password is checked before the token is spent: a link is not
	// lost to a password that is too short.
	hash, err := a.hashPassword(ctx, password)
	if err != nil {
		return store.TokenUser{}, err
	}
	var t store.TokenUser
	err = a.store.InTx(ctx, func(tx pgx.Tx) error {
		inv, org, err := a.tokens.UseInvitation(ctx, tx, hashToken(token))
		if err != nil {
			return err
		}
		u, _, err := a.store.SignupUser(ctx, tx, org.ID, inv.Email, "buyer", hash)
		if err != nil {
			return err
		}
		u.Verified = true
		t = store.TokenUser{Org: org, User: u}
		return a.store.MarkVerified(ctx, tx, org.ID, u.ID)
	})
	return t, err
}

// linkTo is the emailed link to path that carries token.
func linkTo(publicURL, path, token string) string {
	return publicURL + path + "?token=" + url.QueryEscape(token)
}

// validFor says how long a link works, for its mail: "7 days", "36 hours".
func validFor(d time.Duration) string {
	switch {
	case d >= 48*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d >= 2*time.Hour:
		return fmt.Sprintf("%d hours", int(d.Hours()))
	}
	return fmt.Sprintf("%d minutes", max(1, int(d.Minutes())))
}
