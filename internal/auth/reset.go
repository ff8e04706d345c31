package auth

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// ResetFor is how long a password-reset link works.
const ResetFor = time.Hour

// RequestReset mails a password-reset link to the account of email at the
// organization orgSlug, if there is one and it is not disabled; for any
// other address it does nothing, and the caller answers the same either
// way.
func (a *Accounts) RequestReset(ctx context.Context, orgSlug, email string) error {
	org, err := a.store.OrgBySlug(ctx, strings.ToLower(strings.TrimSpace(orgSlug)))
	if errors.Is(err, apperr.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	u, err := a.store.AccountByEmail(ctx, org.ID, strings.ToLower(strings.TrimSpace(email)))
	if errors.Is(err, apperr.ErrNotFound) || (err == nil && u.Disabled) {
		return nil
	}
	if err != nil {
		return err
	}
	return a.store.InTx(ctx, func(tx pgx.Tx) error { return a.sendReset(ctx, tx, org, u.User) })
}

// ResetPassword spends a reset link's token and sets its user's new
// password. Every other session of the user ends (keep is the stored
// token of the request's own session, which stays if it is theirs); their
// stored tokens are returned, so the caller can close their sockets at
// once here (every process hears the ends through Postgres). The link
// proves the address too: the account is verified from then on.
func (a *Accounts) ResetPassword(ctx context.Context, token, password, keep string) (store.TokenUser, []string, error) {
	// The password is checked before the token is spent: a link is not
	// lost to a password that is too short.
	hash, err := a.hashPassword(ctx, password)
	if err != nil {
		return store.TokenUser{}, nil, err
	}
	var t store.TokenUser
	var ended []string
	err = a.store.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		if t, err = a.tokens.Use(ctx, tx, store.TokenPasswordReset, hashToken(token)); err != nil {
			return err
		}
		if ended, err = a.store.ResetPassword(ctx, tx, t.Org.ID, t.User.ID, hash, keep); err != nil {
			return err
		}
		t.User.Verified = true
		return a.store.MarkVerified(ctx, tx, t.Org.ID, t.User.ID)
	})
	if err != nil {
		return store.TokenUser{}, nil, err
	}
	return t, ended, nil
}
