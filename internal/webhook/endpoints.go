package webhook

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net"
	"slices"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// Types are the delivery types an endpoint may ask for
// (docs/architecture.md#webhooks). The outbox trigger maps audit actions
// to them (migration webhook_type); a type whose change the core does not
// make yet simply never fires.
var Types = []string{
	"hold.created", "hold.extended", "hold.released", "hold.expired",
	"booking.created", "booking.cancelled",
	"seat.blocked", "seat.unblocked",
	"waitlist.offered", "waitlist.joined", "waitlist.left",
	"ticket.checked_in",
	"booking.paid", "payment.failed", "refund.succeeded",
}

// Endpoints registers webhook endpoints.
type Endpoints struct {
	st           *store.Webhooks
	resolver     Resolver
	allowPrivate bool
}

// NewEndpoints returns the registration of endpoints on st.
func NewEndpoints(st *store.Webhooks, allowPrivate bool) *Endpoints {
	return &Endpoints{st: st, resolver: net.DefaultResolver, allowPrivate: allowPrivate}
}

// Create registers url for the given types and returns the endpoint with
// its signing secret.
func (e *Endpoints) Create(ctx context.Context, org uuid.UUID, url string, types []string) (store.WebhookEndpoint, error) {
	return e.create(ctx, org, nil, url, types)
}

// CreateForKey is Create for a request made with the API key key: the
// endpoint is deleted when the key is revoked.
func (e *Endpoints) CreateForKey(ctx context.Context, org, key uuid.UUID, url string, types []string) (store.WebhookEndpoint, error) {
	return e.create(ctx, org, &key, url, types)
}

func (e *Endpoints) create(ctx context.Context, org uuid.UUID, byKey *uuid.UUID, url string, types []string) (store.WebhookEndpoint, error) {
	if len(types) == 0 {
		return store.WebhookEndpoint{}, &apperr.Error{Code: apperr.Invalid, Message: "name at least one event type",
			Fields: map[string]string{"events": "must name at least one event type"}}
	}
	var want []string
	for _, t := range types {
		if !slices.Contains(Types, t) {
			return store.WebhookEndpoint{}, &apperr.Error{Code: apperr.Invalid, Message: "unknown event type " + clip(t, 40),
				Fields: map[string]string{"events": "unknown event type " + clip(t, 40)}}
		}
		if !slices.Contains(want, t) {
			want = append(want, t)
		}
	}
	u, err := CheckURL(ctx, e.resolver, url, e.allowPrivate)
	if err != nil {
		return store.WebhookEndpoint{}, err
	}
	secret, err := newSecret()
	if err != nil {
		return store.WebhookEndpoint{}, err
	}
	return e.st.CreateEndpoint(ctx, org, byKey, u, want, secret)
}

// Rotation grace: how long the secret a rotation replaces keeps signing
// beside the new one.
const (
	DefaultGrace = 24 * time.Hour
	MaxGrace     = 7 * 24 * time.Hour
)

// RotateSecret gives an endpoint of org a new signing secret, in the
// answer only (as Create's). The old one keeps signing beside it for
// grace (DefaultGrace when 0, at most MaxGrace): deliveries carry both
// signatures meanwhile, so the receiver can take the new secret in
// whenever it likes, and the old one stops signing by itself. NotFound
// for another organization's endpoint.
func (e *Endpoints) RotateSecret(ctx context.Context, org, id uuid.UUID, grace time.Duration) (store.WebhookEndpoint, error) {
	if grace == 0 {
		grace = DefaultGrace
	}
	if grace < 0 || grace > MaxGrace {
		return store.WebhookEndpoint{}, &apperr.Error{Code: apperr.Invalid, Message: "the grace period is out of range",
			Fields: map[string]string{"grace": "must be between 1 second and 7 days"}}
	}
	secret, err := newSecret()
	if err != nil {
		return store.WebhookEndpoint{}, err
	}
	return e.st.RotateSecret(ctx, org, id, secret, grace)
}

// newSecret draws a signing secret: 256 random bits.
func newSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b[:]), nil
}
