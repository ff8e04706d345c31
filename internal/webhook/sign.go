// Package webhook sends an organization's changes to its registered URLs:
// signed JSON deliveries, read from the outbox the change's own
// transaction wrote, retried with backoff, in order per seat.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader carries a delivery's signature.
const SignatureHeader = "Seatd-Signature"

// Sign returns the Seatd-Signature value of body sent at t:
// "t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>", with a v1 for
// each secret (an endpoint's, and while a rotation's grace lasts the one
// it replaced: a receiver accepts the delivery if any v1 matches its
// secret). Signing the time with the body lets receivers refuse replays
// of old deliveries.
func Sign(secrets []string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=" + ts)
	for _, s := range secrets {
		b.WriteString(",v1=" + hex.EncodeToString(mac(s, ts, body)))
	}
	return b.String()
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}
