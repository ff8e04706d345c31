package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// newToken is a link's secret: 32 random bytes, base64url, and the hash
// stored in its place.
func newToken() (token string, hash []byte) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	token = base64.RawURLEncoding.EncodeToString(b[:])
	return token, hashToken(token)
}

// hashToken is the stored form of a token: its SHA-256. The token is
// random, so a fast hash cannot be turned back by guessing.
func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}
