package door

import (
	"context"
	"encoding/base64"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
)

// KeyInfo is what a scanner downloads to keep admitting offline: the
// event's public key, to verify codes (static/js/scanner.js does it with
// WebCrypto), the tickets it must refuse or has seen, and the seats'
// labels to show. It is as fresh as At; a scanner downloads it again
// whenever it is online.
type KeyInfo struct {
	Org   uuid.UUID `json:"org"`
	Event uuid.UUID `json:"event"`
	// PublicKey is the raw 32-byte Ed25519 public key, unpadded base64url.
	PublicKey string `json:"public_key"`
	// Revoked are the cancelled tickets: their codes still verify, and
	// must be refused.
	Revoked []uuid.UUID `json:"revoked"`
	// Admitted are the tickets admitted so far, anywhere.
	Admitted []uuid.UUID `json:"admitted"`
	// Seats are the labels of the live tickets' seats, by seat id (codes
	// carry the seat's id).
	Seats map[uuid.UUID]string `json:"seats"`
	At    time.Time            `json:"at"`
}

// Key returns what an offline scanner of event needs. The event's key pair
// is made if it has none yet.
func (d *Door) Key(ctx context.Context, a hold.Actor, event uuid.UUID) (KeyInfo, error) {
	if err := scanner(a); err != nil {
		return KeyInfo{}, err
	}
	at := d.now().UTC()
	pub, err := d.codes.Public(ctx, a.Org, event)
	if err != nil {
		return KeyInfo{}, err
	}
	l, err := d.st.DoorList(ctx, a.Org, event)
	if err != nil {
		return KeyInfo{}, err
	}
	return KeyInfo{Org: a.Org, Event: event, PublicKey: base64.RawURLEncoding.EncodeToString(pub),
		Revoked: l.Revoked, Admitted: l.Admitted, Seats: l.Seats, At: at}, nil
}
