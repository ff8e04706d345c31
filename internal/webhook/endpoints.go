package webhook

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net"
	"slices"

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
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return store.WebhookEndpoint{}, err
	}
	return e.st.CreateEndpoint(ctx, org, u, want, "whsec_"+base64.RawURLEncoding.EncodeToString(b[:]))
}
