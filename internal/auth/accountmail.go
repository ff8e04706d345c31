package auth

import (
	"context"
	"net/url"
	"time"

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
	return a.sendLink(ctx, tx, org, u, linkMail{kind: store.TokenVerifyEmail, ttl: VerifyFor, path: "/verify-email", key: "verify",
		subject: "Confirm your email for " + org.Name,
		layout: email.Layout{Org: org.Name, Title: "Confirm your email", Preheader: "One click, and you can choose seats.",
			Footer: "You get this mail because this address was used to sign up at " + org.Name + "."},
		body: func(link string) templ.Component { return email.VerifyEmail(org.Name, link, "24 hours") }})
}

// linkMail is a mail carrying a single-use link: the kind of token it
// stores and for how long, the page the link opens, the outbox key's
// prefix, and the mail around the link.
type linkMail struct {
	kind    string
	ttl     time.Duration
	path    string
	key     string
	subject string
	layout  email.Layout
	body    func(link string) templ.Component
}

// sendLink stores a new token of m's kind for u and writes m's mail with
// the link that spends it.
func (a *Accounts) sendLink(ctx context.Context, tx pgx.Tx, org store.Org, u store.User, m linkMail) error {
	token, hash := newToken()
	id, err := a.tokens.Create(ctx, tx, org.ID, u.ID, m.kind, hash, m.ttl)
	if err != nil {
		return err
	}
	link := linkTo(a.publicURL, m.path, token)
	return a.enqueue(ctx, tx, org, u, m.subject, m.key+":"+id.String(), m.layout, m.body(link))
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
	return a.sendLink(ctx, tx, org, u, linkMail{kind: store.TokenPasswordReset, ttl: ResetFor, path: "/password-reset/confirm", key: "reset",
		subject: "Reset your password at " + org.Name,
		layout: email.Layout{Org: org.Name, Title: "Reset your password", Preheader: "A link to choose a new password.",
			Footer: "You get this mail because a password reset was asked for this address at " + org.Name + "."},
		body: func(link string) templ.Component { return email.PasswordReset(link, "one hour") }})
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
