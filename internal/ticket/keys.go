package ticket

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/seal"
	"seatd/internal/store"
)

// KeyStore keeps the events' key pairs (store.TicketKeys).
type KeyStore interface {
	Get(ctx context.Context, org, event uuid.UUID) (store.TicketKey, error)
	Add(ctx context.Context, k store.TicketKey) (store.TicketKey, error)
}

var _ KeyStore = (*store.TicketKeys)(nil)

// maxCached bounds the key pairs kept in memory: far more events than a
// process serves at once. When full the cache starts again empty (pairs
// never change, so forgetting one only costs a read).
const maxCached = 4096

// Keys gives each event its Ed25519 key pair, made on first use and kept
// in Postgres with the private key's seed sealed (package seal; the
// event's ids are the additional data, so a sealed seed copied to another
// event's row does not open). It signs and verifies that event's codes.
// Safe for concurrent use.
type Keys struct {
	store KeyStore
	box   *seal.Box

	mu    sync.Mutex
	pairs map[[2]uuid.UUID]pair // by (org, event)
}

type pair struct {
	public  ed25519.PublicKey
	private ed25519.PrivateKey
}

// NewKeys returns the key pairs kept in st, sealed with secret
// (config.Config.TicketSecret, at least seal.MinSecretLen bytes).
func NewKeys(st KeyStore, secret string) (*Keys, error) {
	box, err := seal.New(secret, "seatd ticket keys v1")
	if err != nil {
		return nil, fmt.Errorf("ticket secret: %w", err)
	}
	return &Keys{store: st, box: box, pairs: map[[2]uuid.UUID]pair{}}, nil
}

// Public returns the public key of an event of org, the one its scanners
// download. An event that is not org's is NotFound.
func (k *Keys) Public(ctx context.Context, org, event uuid.UUID) (ed25519.PublicKey, error) {
	p, err := k.pair(ctx, org, event)
	return p.public, err
}

// Code returns the code of a ticket (c names its organization, event and
// seat), signed with its event's key.
func (k *Keys) Code(ctx context.Context, c Claims) (string, error) {
	p, err := k.pair(ctx, c.Org, c.Event)
	if err != nil {
		return "", err
	}
	return Sign(p.private, c), nil
}

// Verify checks a code presented at the door of an event of org (see
// Verify); a malformed code or one of another event is refused before
// any key is read.
func (k *Keys) Verify(ctx context.Context, org, event uuid.UUID, code string) (Claims, error) {
	c, err := Parse(code)
	if err != nil {
		return Claims{}, err
	}
	if c.Event != event {
		return Claims{}, refuse(ErrOtherEvent, apperr.NotFound)
	}
	pub, err := k.Public(ctx, org, event)
	if err != nil {
		return Claims{}, err
	}
	return Verify(pub, org, event, code)
}

func (k *Keys) pair(ctx context.Context, org, event uuid.UUID) (pair, error) {
	id := [2]uuid.UUID{org, event}
	k.mu.Lock()
	p, ok := k.pairs[id]
	k.mu.Unlock()
	if ok {
		return p, nil
	}
	sk, err := k.store.Get(ctx, org, event)
	if errors.Is(err, apperr.ErrNotFound) {
		sk, err = k.create(ctx, org, event)
	}
	if err != nil {
		return pair{}, err
	}
	if p, err = k.open(sk); err != nil {
		return pair{}, err
	}
	k.mu.Lock()
	if len(k.pairs) >= maxCached {
		clear(k.pairs)
	}
	k.pairs[id] = p
	k.mu.Unlock()
	return p, nil
}

// create makes an event's key pair and stores it, unless another process
// stored one first (then that one is the event's).
func (k *Keys) create(ctx context.Context, org, event uuid.UUID) (store.TicketKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return store.TicketKey{}, err
	}
	sealed, err := k.box.Seal(priv.Seed(), additional(org, event))
	if err != nil {
		return store.TicketKey{}, err
	}
	return k.store.Add(ctx, store.TicketKey{Org: org, Event: event, Public: pub, SealedSeed: sealed})
}

// errUnsealed is an event key that does not open: the secret is not the
// one it was sealed with, or the row was altered.
var errUnsealed = errors.New("the event's ticket key does not open with SEATD_TICKET_SECRET (not the secret it was sealed with, or the stored key was altered)")

func (k *Keys) open(sk store.TicketKey) (pair, error) {
	seed, err := k.box.Open(sk.SealedSeed, additional(sk.Org, sk.Event))
	if err != nil || len(seed) != ed25519.SeedSize {
		return pair{}, fmt.Errorf("event %s: %w", sk.Event, errUnsealed)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub, _ := priv.Public().(ed25519.PublicKey)
	if !pub.Equal(ed25519.PublicKey(sk.Public)) {
		return pair{}, fmt.Errorf("event %s: %w", sk.Event, errUnsealed)
	}
	return pair{public: pub, private: priv}, nil
}

// additional binds a sealed seed to its event.
func additional(org, event uuid.UUID) []byte {
	return append(append([]byte("seatd ticket key v1"), org[:]...), event[:]...)
}
