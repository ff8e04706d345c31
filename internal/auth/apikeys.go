package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// KeyPrefix starts every API key, so a leaked key is recognizable (secret
// scanners, logs) and cannot be mistaken for a session token.
const KeyPrefix = "seatd_"

// API key cache settings.
const (
	// keyFresh is how long a process trusts its cached copy of a key. A
	// revocation is announced (RevokedChannel) and drops the copy at once;
	// this bounds how long a key stays usable while that announcement is on
	// its way, or when it was sent while the process was not listening.
	keyFresh = time.Second
	// keyTouchEvery is how often a key's last use is written, at most, per
	// process: the list shows last use to the minute, not per request.
	keyTouchEvery = time.Minute
	// keyCacheMax bounds the cache; beyond it, it is emptied.
	keyCacheMax = 10_000
	// unknownFor is how long a well-formed key Postgres does not know is
	// refused without asking again. Keys are 256 random bits: a key made
	// meanwhile never has the hash of one looked up before.
	unknownFor = time.Minute
	// keyLen is the length of every key: the prefix and 32 bytes in
	// unpadded base64url.
	keyLen = len(KeyPrefix) + 43
)

// RevokedChannel is the Postgres notification channel on which a key's
// revocation is announced, with the key's id, by the statement that
// revokes it (migration 029's trigger): no revocation commits unannounced.
const RevokedChannel = "seatd_api_keys"

// Notifier is what APIKeys needs of the process's notifier
// (internal/notify).
type Notifier interface {
	Listen(channel string, fn func(payload string)) (unlisten func())
	OnReady(fn func()) (remove func())
}

// APIKeys creates, checks and revokes API keys. A key acts with its
// organization and role as the user who created it; only the SHA-256 of
// the key is stored. The key carries 256 random bits, so nobody can guess
// it by trying hashes: a slow password hash would add nothing but a
// bcrypt per request.
type APIKeys struct {
	store    *store.Accounts
	notifier Notifier
	log      *slog.Logger
	now      func() time.Time

	mu      sync.Mutex
	entries map[[sha256.Size]byte]*keyEntry
	touched map[uuid.UUID]time.Time // last use written, per key
	// unknown are hashes of well-formed keys Postgres did not know, and
	// when it said so: a flood of made-up keys costs one query per key
	// at most, garbage none.
	unknown map[[sha256.Size]byte]time.Time
	// lookups counts the keys looked up in Postgres.
	lookups atomic.Int64
}

type keyEntry struct {
	key     store.APIKey
	checked time.Time
}

// NewAPIKeys returns the API keys of st; Listen hears revocations through n.
func NewAPIKeys(st *store.Accounts, n Notifier, log *slog.Logger) *APIKeys {
	return &APIKeys{store: st, notifier: n, log: log, now: time.Now,
		entries: map[[sha256.Size]byte]*keyEntry{}, touched: map[uuid.UUID]time.Time{},
		unknown: map[[sha256.Size]byte]time.Time{}}
}

// Scopes: the kinds of request a key may make (docs/integrators.md#api-keys).
// session.Guards decides which one a route needs: read for GET, holds for
// the buyer's routes, box_office for the staff's other writes, admin for
// the organizer's (events, charts, keys, webhooks).
const (
	ScopeRead      = "read"
	ScopeHolds     = "holds"
	ScopeBoxOffice = "box_office"
	ScopeAdmin     = "admin"
)

// RoleScopes are the scopes a key of role may have, in order; a key made
// without scopes has them all (less any its maker lacks).
func RoleScopes(role string) []string {
	switch role {
	case "buyer":
		return []string{ScopeRead, ScopeHolds}
	case "box_office":
		return []string{ScopeRead, ScopeHolds, ScopeBoxOffice}
	case "organizer":
		return []string{ScopeRead, ScopeHolds, ScopeBoxOffice, ScopeAdmin}
	}
	return nil
}

// KeyRequest is a key to make.
type KeyRequest struct {
	Name      string
	Role      string
	Scopes    []string   // nil: all the role allows
	ExpiresAt *time.Time // nil: never (or the maker's expiry)
	// Maker is the key the request is made with (nil from a session): the
	// new key can do no more than it, expires no later, and is revoked
	// with it.
	Maker *store.APIKey
}

// Create makes a key of org acting as user by; the secret is returned
// once and never stored.
func (k *APIKeys) Create(ctx context.Context, org, by uuid.UUID, req KeyRequest) (store.APIKey, string, error) {
	name := strings.TrimSpace(req.Name)
	if name == "" || len(name) > 100 {
		return store.APIKey{}, "", &apperr.Error{Code: apperr.Invalid, Message: "name the key (1 to 100 characters)",
			Fields: map[string]string{"name": "must be 1 to 100 characters"}}
	}
	if err := checkRole(req.Role); err != nil {
		return store.APIKey{}, "", err
	}
	n := store.NewAPIKey{Name: name, Role: req.Role, ExpiresAt: req.ExpiresAt}
	var err error
	if n.Scopes, err = k.scopes(req); err != nil {
		return store.APIKey{}, "", err
	}
	if n.ExpiresAt != nil && !n.ExpiresAt.After(k.now()) {
		return store.APIKey{}, "", &apperr.Error{Code: apperr.Invalid, Message: "the expiry has passed",
			Fields: map[string]string{"expires_at": "must be in the future"}}
	}
	if m := req.Maker; m != nil {
		n.CreatedByKey = &m.ID
		if m.ExpiresAt != nil && n.ExpiresAt == nil {
			n.ExpiresAt = m.ExpiresAt
		}
		if m.ExpiresAt != nil && n.ExpiresAt.After(*m.ExpiresAt) {
			return store.APIKey{}, "", &apperr.Error{Code: apperr.Forbidden, Message: "a key cannot make a key that outlives it",
				Fields: map[string]string{"expires_at": "must not be after the expiry of the key making it"}}
		}
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return store.APIKey{}, "", err
	}
	secret := KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	h := sha256.Sum256([]byte(secret))
	n.Hash, n.Hint = h[:], secret[:len(KeyPrefix)+6]
	key, err := k.store.CreateAPIKey(ctx, org, by, n)
	return key, secret, err
}

// scopes are the scopes of the key req asks for, in RoleScopes' order:
// those asked, or all the role allows that the maker has. A scope the
// role does not allow is invalid; one the maker lacks is forbidden.
func (k *APIKeys) scopes(req KeyRequest) ([]string, error) {
	allowed := RoleScopes(req.Role)
	for _, sc := range req.Scopes {
		if !slices.Contains(allowed, sc) {
			return nil, &apperr.Error{Code: apperr.Invalid, Message: "a " + req.Role + " key cannot have that scope",
				Fields: map[string]string{"scopes": "must be some of " + strings.Join(allowed, ", ")}}
		}
		if req.Maker != nil && !slices.Contains(req.Maker.Scopes, sc) {
			return nil, &apperr.Error{Code: apperr.Forbidden, Message: "a key cannot make a key with a scope it lacks: " + sc,
				Fields: map[string]string{"scopes": "must be some of the making key's: " + strings.Join(req.Maker.Scopes, ", ")}}
		}
	}
	var out []string
	for _, sc := range allowed {
		if req.Scopes != nil && !slices.Contains(req.Scopes, sc) {
			continue // not asked for
		}
		if req.Scopes == nil && req.Maker != nil && !slices.Contains(req.Maker.Scopes, sc) {
			continue // not the maker's to give
		}
		out = append(out, sc)
	}
	if len(out) == 0 {
		return nil, &apperr.Error{Code: apperr.Invalid, Message: "the key would have no scope",
			Fields: map[string]string{"scopes": "must name at least one of " + strings.Join(allowed, ", ")}}
	}
	return out, nil
}

// ErrBadKey is the answer for a key that is unknown, revoked, expired, or
// whose creator is disabled: all alike, so the answer tells nothing.
var ErrBadKey = apperr.E(apperr.Unauthorized, "the API key is not valid")

// Authenticate returns the live key of secret. A process trusts its copy
// for keyFresh at most; a revocation anywhere drops it at once.
func (k *APIKeys) Authenticate(ctx context.Context, secret string) (store.APIKey, error) {
	if !wellFormed(secret) {
		return store.APIKey{}, ErrBadKey // never a key of ours: no query
	}
	h := sha256.Sum256([]byte(secret))
	now := k.now()
	k.mu.Lock()
	e := k.entries[h]
	missed, wasMissed := k.unknown[h]
	k.mu.Unlock()
	if e == nil && wasMissed && now.Sub(missed) < unknownFor {
		return store.APIKey{}, ErrBadKey
	}
	if e == nil || now.Sub(e.checked) >= keyFresh {
		k.lookups.Add(1)
		key, err := k.store.APIKeyByHash(ctx, h[:])
		if errors.Is(err, apperr.ErrNotFound) {
			k.mu.Lock()
			delete(k.entries, h)
			if len(k.unknown) >= keyCacheMax {
				clear(k.unknown)
			}
			k.unknown[h] = now
			k.mu.Unlock()
			return store.APIKey{}, ErrBadKey
		}
		if err != nil {
			return store.APIKey{}, fmt.Errorf("look up API key: %w", err)
		}
		e = &keyEntry{key: key, checked: now}
		k.mu.Lock()
		if len(k.entries) >= keyCacheMax {
			clear(k.entries)
		}
		k.entries[h] = e
		k.mu.Unlock()
	}
	if x := e.key.ExpiresAt; x != nil && !now.Before(*x) {
		return store.APIKey{}, ErrBadKey // expired while cached
	}
	k.touch(ctx, e.key.OrgID, e.key.ID, now)
	return e.key, nil
}

// wellFormed reports whether secret has the shape of a key Create makes:
// the prefix and 32 bytes in unpadded base64url.
func wellFormed(secret string) bool {
	if len(secret) != keyLen || !strings.HasPrefix(secret, KeyPrefix) {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(secret[len(KeyPrefix):])
	return err == nil && len(b) == 32
}

// touch writes a key's last use at most once per keyTouchEvery per
// process. A failed write is only logged: the request goes on.
func (k *APIKeys) touch(ctx context.Context, org, id uuid.UUID, now time.Time) {
	k.mu.Lock()
	due := now.Sub(k.touched[id]) >= keyTouchEvery
	if due {
		if len(k.touched) >= keyCacheMax {
			clear(k.touched)
		}
		k.touched[id] = now
	}
	k.mu.Unlock()
	if !due {
		return
	}
	if err := k.store.TouchAPIKey(context.WithoutCancel(ctx), org, id, now); err != nil {
		k.log.WarnContext(ctx, "record API key use", "key", id, "err", err)
	}
}

// Revoke revokes a key of org. This process refuses it at once; the
// others when they hear the revocation's announcement (within keyFresh
// whatever happens to it).
func (k *APIKeys) Revoke(ctx context.Context, org, id uuid.UUID) (store.APIKey, error) {
	key, err := k.store.RevokeAPIKey(ctx, org, id)
	if err != nil {
		return key, err
	}
	k.forget(id)
	return key, nil
}

// Listen applies the revocations announced by any process until the
// returned function is called. Whenever the notifier (re)connects,
// announcements may have been missed: every cached key is dropped.
func (k *APIKeys) Listen() (stop func()) {
	unlisten := k.notifier.Listen(RevokedChannel, func(p string) {
		if id, err := uuid.Parse(p); err == nil {
			k.forget(id)
		}
	})
	unready := k.notifier.OnReady(func() {
		k.mu.Lock()
		clear(k.entries)
		k.mu.Unlock()
	})
	return func() {
		unlisten()
		unready()
	}
}

func (k *APIKeys) forget(id uuid.UUID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for h, e := range k.entries {
		if e.key.ID == id {
			delete(k.entries, h)
		}
	}
}
