package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
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
}

type keyEntry struct {
	key     store.APIKey
	checked time.Time
}

// NewAPIKeys returns the API keys of st; Listen hears revocations through n.
func NewAPIKeys(st *store.Accounts, n Notifier, log *slog.Logger) *APIKeys {
	return &APIKeys{store: st, notifier: n, log: log, now: time.Now,
		entries: map[[sha256.Size]byte]*keyEntry{}, touched: map[uuid.UUID]time.Time{}}
}

// Create makes a key of org acting as user by in role; the secret is
// returned once and never stored.
func (k *APIKeys) Create(ctx context.Context, org, by uuid.UUID, name, role string) (store.APIKey, string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return store.APIKey{}, "", &apperr.Error{Code: apperr.Invalid, Message: "name the key (1 to 100 characters)",
			Fields: map[string]string{"name": "must be 1 to 100 characters"}}
	}
	if err := checkRole(role); err != nil {
		return store.APIKey{}, "", err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return store.APIKey{}, "", err
	}
	secret := KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	h := sha256.Sum256([]byte(secret))
	key, err := k.store.CreateAPIKey(ctx, org, by, name, role, h[:], secret[:len(KeyPrefix)+6])
	return key, secret, err
}

// ErrBadKey is the answer for a key that is unknown, revoked, or whose
// creator is disabled: all alike, so the answer tells nothing.
var ErrBadKey = apperr.E(apperr.Unauthorized, "the API key is not valid")

// Authenticate returns the live key of secret. A process trusts its copy
// for keyFresh at most; a revocation anywhere drops it at once.
func (k *APIKeys) Authenticate(ctx context.Context, secret string) (store.APIKey, error) {
	if !strings.HasPrefix(secret, KeyPrefix) || len(secret) > 100 {
		return store.APIKey{}, ErrBadKey
	}
	h := sha256.Sum256([]byte(secret))
	now := k.now()
	k.mu.Lock()
	e := k.entries[h]
	k.mu.Unlock()
	if e == nil || now.Sub(e.checked) >= keyFresh {
		key, err := k.store.APIKeyByHash(ctx, h[:])
		if errors.Is(err, apperr.ErrNotFound) {
			k.mu.Lock()
			delete(k.entries, h)
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
	k.touch(ctx, e.key.OrgID, e.key.ID, now)
	return e.key, nil
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
