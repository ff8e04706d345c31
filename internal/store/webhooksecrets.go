package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Sealer seals and opens the secrets the store keeps at rest (a
// *seal.Box; package seal says how).
type Sealer interface {
	Seal(plain, additional []byte) ([]byte, error)
	Open(sealed, additional []byte) ([]byte, error)
}

// SetSealer sets what seals webhook signing secrets; call it before the
// store is used (app does, with a box under SEATD_TICKET_SECRET). Without
// one, endpoints cannot be created or rotated.
func (s *Store) SetSealer(b Sealer) { s.shared.secrets = b }

var errNoSealer = errors.New("store: no sealer for webhook secrets (Store.SetSealer)")

// secretAD binds a sealed webhook secret to its endpoint: copied to
// another endpoint's row, it does not open.
func secretAD(org, endpoint uuid.UUID) []byte {
	return append(append([]byte("seatd webhook secret v1"), org[:]...), endpoint[:]...)
}

func (s *shared) sealSecret(org, endpoint uuid.UUID, secret string) ([]byte, error) {
	if s.secrets == nil {
		return nil, errNoSealer
	}
	return s.secrets.Seal([]byte(secret), secretAD(org, endpoint))
}

// openSecrets is an endpoint's signing secrets as claimed: the current
// one (clear, from before migration 036, until SealClearSecrets seals it;
// or sealed) and the previous one, sealed, while a rotation's grace lasts.
func (s *shared) openSecrets(org, endpoint uuid.UUID, plaintext *string, sealed, previous []byte) ([]string, error) {
	var out []string
	for _, v := range [][]byte{sealed, previous} {
		if v == nil {
			continue
		}
		if s.secrets == nil {
			return nil, errNoSealer
		}
		plain, err := s.secrets.Open(v, secretAD(org, endpoint))
		if err != nil {
			return nil, fmt.Errorf("webhook %s: its signing secret does not open with SEATD_TICKET_SECRET (not the secret it was sealed with, or altered): %w", endpoint, err)
		}
		out = append(out, string(plain))
	}
	if plaintext != nil {
		out = append([]string{*plaintext}, out...)
	}
	return out, nil
}

// RotateSecret makes secret the signing secret of an endpoint of org, at
// once; the secret it replaces keeps signing beside it until grace has
// passed, so a receiver that still checks the old one misses nothing
// (deliveries carry both signatures meanwhile). A rotation during another
// one's grace drops the older of the two. The answer carries the new
// secret (shown once). NotFound for another organization's endpoint or a
// deleted one.
func (s *Webhooks) RotateSecret(ctx context.Context, org, id uuid.UUID, secret string, grace time.Duration) (WebhookEndpoint, error) {
	e := WebhookEndpoint{ID: id, OrgID: org, Secret: secret}
	sealed, err := s.sealSecret(org, id, secret)
	if err != nil {
		return WebhookEndpoint{}, err
	}
	err = inTx(ctx, s.db, func(tx pgx.Tx) error {
		var plaintext *string
		var current []byte
		err := tx.QueryRow(ctx, `
			SELECT secret, sealed_secret FROM webhook_endpoints WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL
			FOR UPDATE`, org, id).Scan(&plaintext, &current)
		if err != nil {
			return notFoundIfNoRows(err, "webhook")
		}
		if current == nil && plaintext != nil { // from before migration 036
			if current, err = s.sealSecret(org, id, *plaintext); err != nil {
				return err
			}
		}
		return tx.QueryRow(ctx, `
			UPDATE webhook_endpoints
			SET sealed_secret = $3, secret = NULL, previous_secret = $4, previous_secret_until = now() + $5::interval
			WHERE org_id = $1 AND id = $2
			RETURNING url, events, created_at, previous_secret_until`, org, id, sealed, current, grace).
			Scan(&e.URL, &e.Events, &e.CreatedAt, &e.PreviousUntil)
	})
	if err != nil {
		return WebhookEndpoint{}, err
	}
	return e, nil
}

// SealClearSecrets seals the signing secrets still kept in the clear
// (stored before migration 036) and returns how many it sealed. app runs
// it after migrating; running it again, or in several processes at once,
// seals each once.
func (s *Webhooks) SealClearSecrets(ctx context.Context) (int, error) {
	n := 0
	for {
		rows, err := s.db.Query(ctx, `SELECT org_id, id, secret FROM webhook_endpoints WHERE secret IS NOT NULL LIMIT 100`)
		if err != nil {
			return n, err
		}
		type inClear struct {
			org, id uuid.UUID
			secret  string
		}
		cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (inClear, error) {
			var c inClear
			return c, r.Scan(&c.org, &c.id, &c.secret)
		})
		if err != nil || len(cs) == 0 {
			return n, err
		}
		for _, c := range cs {
			sealed, err := s.sealSecret(c.org, c.id, c.secret)
			if err != nil {
				return n, err
			}
			// The clear secret must still be this one: another process may
			// have sealed it, or a rotation replaced it, meanwhile.
			tag, err := s.db.Exec(ctx, `UPDATE webhook_endpoints SET sealed_secret = $4, secret = NULL
				WHERE org_id = $1 AND id = $2 AND secret = $3`, c.org, c.id, c.secret, sealed)
			if err != nil {
				return n, err
			}
			n += int(tag.RowsAffected())
		}
	}
}
