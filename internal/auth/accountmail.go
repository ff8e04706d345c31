package auth

import (
	"context"
	"net/url"

	"github.com/a-h/templ"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/mail"
	"seatd/internal/store"
	"seatd/views/email"
)

// The mails of accounts, written to the outbox (internal/mail) in the
// transaction of the change that sends them. Links carry the token in
// the query; the page they open asks for a click that posts it (a mail
// scanner's fetch spends nothing).

// sendVerification stores a new verification token of u and writes its
// mail.
func (a *Accounts) sendVerification(ctx context.Context, tx pgx.Tx, org store.Org, u store.User) error {
	token, hash := newToken()
	id, err := a.tokens.Create(ctx, tx, org.ID, u.ID, store.TokenVerifyEmail, hash, VerifyFor)
	if err != nil {
		return err
	}
	link := a.publicURL + "/verify-email?token=" + url.QueryEscape(token)
	return a.enqueue(ctx, tx, org, u, "Confirm your email for "+org.Name, "verify:"+id.String(),
		email.Layout{Org: org.Name, Title: "Confirm your email", Preheader: "One click, and you can choose seats.",
			Footer: "You get this mail because this address was used to sign up at " + org.Name + "."},
		email.VerifyEmail(org.Name, link, "24 hours"))
}

// sendSignupExists writes the notice that someone tried to sign up with
// the address of u, a verified account.
func (a *Accounts) sendSignupExists(ctx context.Context, tx pgx.Tx, org store.Org, u store.User) error {
	signIn := a.publicURL + "/login?org=" + url.QueryEscape(org.Slug)
	reset := a.publicURL + "/password-reset?org=" + url.QueryEscape(org.Slug)
	return a.enqueue(ctx, tx, org, u, "Sign-up attempt at "+org.Name, "signup-exists:"+uuid.NewString(),
		email.Layout{Org: org.Name, Title: "You have an account already", Preheader: "Someone tried to sign up with your address.",
			Footer: "You get this mail because this address was used to sign up at " + org.Name + "."},
		email.SignupExists(org.Name, signIn, reset))
}

// sendReset stores a new password-reset token of u and writes its mail.
func (a *Accounts) sendReset(ctx context.Context, tx pgx.Tx, org store.Org, u store.User) error {
	token, hash := newToken()
	id, err := a.tokens.Create(ctx, tx, org.ID, u.ID, store.TokenPasswordReset, hash, ResetFor)
	if err != nil {
		return err
	}
	link := a.publicURL + "/password-reset/confirm?token=" + url.QueryEscape(token)
	return a.enqueue(ctx, tx, org, u, "Reset your password at "+org.Name, "reset:"+id.String(),
		email.Layout{Org: org.Name, Title: "Reset your password", Preheader: "A link to choose a new password.",
			Footer: "You get this mail because a password reset was asked for this address at " + org.Name + "."},
		email.PasswordReset(link, "one hour"))
}

// enqueue renders a mail to u and writes it to the outbox in tx.
func (a *Accounts) enqueue(ctx context.Context, tx pgx.Tx, org store.Org, u store.User, subject, key string,
	l email.Layout, body templ.Component) error {
	text, html, err := email.Render(ctx, l, body)
	if err != nil {
		return err
	}
	return mail.Enqueue(ctx, tx, org.ID, mail.Message{To: u.Email, Subject: subject, Text: text, HTML: html, Key: key})
}
