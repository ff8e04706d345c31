package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
	"seatd/internal/pg"
)

// Org is a tenant.
type Org struct {
	ID   uuid.UUID
	Slug string
	Name string
	// SignupPolicy says who may sign up on the organization's storefront:
	// SignupOpen, SignupInviteOnly or SignupClosed.
	SignupPolicy string
}

// The sign-up policies of an organization.
const (
	SignupOpen       = "open"
	SignupInviteOnly = "invite_only"
	SignupClosed     = "closed"
)

// User is an account of one organization.
type User struct {
	ID           uuid.UUID
	OrgID        uuid.UUID
	Email        string
	Role         string
	PasswordHash string
	// Verified: the user proved they read mail at Email (or the account
	// was made by an operator, who vouches for it).
	Verified bool
	// CreatedAt is when the account was made (read where sign-in needs
	// it: a new account's holds are capped lower).
	CreatedAt time.Time
}

// CreateOrg inserts an organization.
func (s *Accounts) CreateOrg(ctx context.Context, slug, name string) (Org, error) {
	o := Org{Slug: slug, Name: name, SignupPolicy: SignupOpen}
	err := s.db.QueryRow(ctx,
		`INSERT INTO organizations (slug, name) VALUES ($1, $2) RETURNING id`, slug, name).Scan(&o.ID)
	if pg.IsUniqueViolation(err) {
		return Org{}, apperr.E(apperr.Conflict, "organization %q exists already", slug)
	}
	if pg.IsInvalidInput(err) {
		return Org{}, apperr.E(apperr.Invalid, "organization slug %q is not valid", slug)
	}
	return o, err
}

// OrgBySlug finds an organization by its slug.
func (s *Accounts) OrgBySlug(ctx context.Context, slug string) (Org, error) {
	o := Org{Slug: slug}
	err := s.db.QueryRow(ctx, `SELECT id, name, signup_policy FROM organizations WHERE slug = $1`, slug).
		Scan(&o.ID, &o.Name, &o.SignupPolicy)
	return o, notFoundIfNoRows(err, "organization")
}

// OrgByID finds an organization by id.
func (s *Accounts) OrgByID(ctx context.Context, id uuid.UUID) (Org, error) {
	o := Org{ID: id}
	err := s.db.QueryRow(ctx, `SELECT slug, name, signup_policy FROM organizations WHERE id = $1`, id).
		Scan(&o.Slug, &o.Name, &o.SignupPolicy)
	return o, notFoundIfNoRows(err, "organization")
}

// CreateUser inserts a user whose email is vouched for (made by an
// operator: verified); the email must already be normalized. Buyers who
// sign up themselves are inserted by SignupUser, unverified.
func (s *Accounts) CreateUser(ctx context.Context, org uuid.UUID, email, role, passwordHash string) (User, error) {
	u := User{OrgID: org, Email: email, Role: role, PasswordHash: passwordHash, Verified: true}
	err := s.db.QueryRow(ctx,
		`INSERT INTO users (org_id, email, role, password_hash, email_verified_at) VALUES ($1, $2, $3, $4, now()) RETURNING id`,
		org, email, role, passwordHash).Scan(&u.ID)
	if pg.IsUniqueViolation(err) {
		return User{}, &apperr.Error{Code: apperr.Conflict, Message: "an account with this email exists already",
			Fields: map[string]string{"email": "is already registered"}}
	}
	if pg.IsInvalidInput(err) {
		return User{}, apperr.E(apperr.Invalid, "user is not valid")
	}
	return u, err
}

// UserByEmail finds a user of org by email.
func (s *Accounts) UserByEmail(ctx context.Context, org uuid.UUID, email string) (User, error) {
	return userByEmail(ctx, s.db, org, email)
}

func userByEmail(ctx context.Context, db pg.DBTX, org uuid.UUID, email string) (User, error) {
	u := User{OrgID: org, Email: email}
	err := db.QueryRow(ctx,
		`SELECT id, role, password_hash, email_verified_at IS NOT NULL FROM users WHERE org_id = $1 AND email = $2`, org, email).
		Scan(&u.ID, &u.Role, &u.PasswordHash, &u.Verified)
	return u, notFoundIfNoRows(err, "user")
}

// UserByID finds a user of org by id.
func (s *Accounts) UserByID(ctx context.Context, org, id uuid.UUID) (User, error) {
	u := User{OrgID: org, ID: id}
	err := s.db.QueryRow(ctx,
		`SELECT email, role, password_hash, email_verified_at IS NOT NULL FROM users WHERE org_id = $1 AND id = $2`, org, id).
		Scan(&u.Email, &u.Role, &u.PasswordHash, &u.Verified)
	return u, notFoundIfNoRows(err, "user")
}

// Account is what sign-in and the session checks need to know about a
// user beyond User: whether it is disabled.
type Account struct {
	User
	Disabled bool
}

// AccountByEmail finds a user of org by email, disabled or not.
func (s *Accounts) AccountByEmail(ctx context.Context, org uuid.UUID, email string) (Account, error) {
	a := Account{User: User{OrgID: org, Email: email}}
	err := s.db.QueryRow(ctx,
		`SELECT id, role, password_hash, email_verified_at IS NOT NULL, disabled_at IS NOT NULL, created_at
		 FROM users WHERE org_id = $1 AND email = $2`, org, email).
		Scan(&a.ID, &a.Role, &a.PasswordHash, &a.Verified, &a.Disabled, &a.CreatedAt)
	return a, notFoundIfNoRows(err, "user")
}

// AccountByID finds a user of org by id, disabled or not.
func (s *Accounts) AccountByID(ctx context.Context, org, id uuid.UUID) (Account, error) {
	a := Account{User: User{OrgID: org, ID: id}}
	err := s.db.QueryRow(ctx,
		`SELECT email, role, password_hash, email_verified_at IS NOT NULL, disabled_at IS NOT NULL
		 FROM users WHERE org_id = $1 AND id = $2`, org, id).
		Scan(&a.Email, &a.Role, &a.PasswordHash, &a.Verified, &a.Disabled)
	return a, notFoundIfNoRows(err, "user")
}

// UserChange is what DisableUser or SetUserRole did: the user as it is
// now and how many of its sessions were deleted.
type UserChange struct {
	User     User
	Sessions int64
}

// DisableUser disables a user of org found by email and deletes every
// session of that user, in one transaction. Disabling a disabled user
// changes nothing but still deletes sessions.
func (s *Accounts) DisableUser(ctx context.Context, org uuid.UUID, email string) (UserChange, error) {
	return s.changeUser(ctx, org, email,
		`UPDATE users SET disabled_at = coalesce(disabled_at, now()) WHERE org_id = $1 AND email = $2
		 RETURNING id, role`)
}

// SetUserRole gives a user of org found by email a new role and deletes
// every session of that user, in one transaction: a session carries the
// role it was signed in with, so ending it is the one way to make the new
// role count everywhere at once.
func (s *Accounts) SetUserRole(ctx context.Context, org uuid.UUID, email, role string) (UserChange, error) {
	return s.changeUser(ctx, org, email,
		`UPDATE users SET role = $3 WHERE org_id = $1 AND email = $2 RETURNING id, role`, role)
}

func (s *Accounts) changeUser(ctx context.Context, org uuid.UUID, email, update string, args ...any) (UserChange, error) {
	c := UserChange{User: User{OrgID: org, Email: email}}
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, update, append([]any{org, email}, args...)...).Scan(&c.User.ID, &c.User.Role)
		if err != nil {
			return notFoundIfNoRows(err, "user")
		}
		tag, err := tx.Exec(ctx, `DELETE FROM sessions WHERE org_id = $1 AND user_id = $2`, org, c.User.ID)
		if err != nil {
			return err
		}
		c.Sessions = tag.RowsAffected()
		return nil
	})
	if err != nil {
		return UserChange{}, err
	}
	return c, nil
}
