// Package seal encrypts the small secrets seatd keeps in Postgres (events'
// ticket signing keys, webhook signing secrets), so that a copy of the
// database — a dump, a backup, a replica — does not hand them out: only a
// process that also has SEATD_TICKET_SECRET can open them.
//
// A Box is AES-256-GCM under a key derived from that secret with
// HKDF-SHA256 for one purpose (its info string), so each kind of secret
// has a key of its own and one never opens as another. Each value gets a
// random nonce, and additional data the caller chooses binds it to its
// row: a sealed value copied to another row does not open there.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// MinSecretLen is the shortest secret New takes.
const MinSecretLen = 32

// ErrOpen is a sealed value that does not open: sealed under another
// secret, or altered, or moved to another row.
var ErrOpen = errors.New("seal: the value does not open")

// Box seals and opens values for one purpose. Safe for concurrent use.
type Box struct{ aead cipher.AEAD }

// New returns the box of purpose (an info string naming what it seals and
// a version, e.g. "seatd webhook secrets v1") under secret, at least
// MinSecretLen bytes.
func New(secret, purpose string) (*Box, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("seal: a secret of at least %d characters is needed, got %d", MinSecretLen, len(secret))
	}
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, purpose, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// Seal returns plain sealed, bound to additional: the nonce, then the
// ciphertext and its tag.
func (b *Box) Seal(plain, additional []byte) ([]byte, error) {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plain)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return b.aead.Seal(nonce, nonce, plain, additional), nil
}

// Open returns what Seal sealed with the same additional data, or
// ErrOpen.
func (b *Box) Open(sealed, additional []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n {
		return nil, ErrOpen
	}
	plain, err := b.aead.Open(nil, sealed[:n], sealed[n:], additional)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}
