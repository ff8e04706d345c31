package ratelimit

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DeviceCookies are the OWASP "device cookies" that keep the lockout
// from being a denial of service: a browser that signed in to an account
// gets a signed, long-lived cookie naming that account, and its sign-ins
// are counted apart from everyone else's (Lockout.Check with its
// device). A stranger's failures lock the account's untrusted attempts
// only; the owner's known browser still gets in, and its own failures
// lock only that cookie.
//
// A cookie is named for its account (a keyed hash of organization and
// email, so the name tells nothing) and holds a random nonce, its expiry
// and an HMAC-SHA256 over the three. Nothing is stored on the server.
type DeviceCookies struct {
	key    []byte
	secure bool
	now    func() time.Time
}

// deviceCookieLife is how long a device stays known without signing in
// again (each sign-in issues a fresh cookie).
const deviceCookieLife = 180 * 24 * time.Hour

// NewDeviceCookies signs device cookies with a key derived from secret
// for this use alone; secure marks them Secure (and names them __Host-).
func NewDeviceCookies(secret string, secure bool) *DeviceCookies {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("seatd device cookies v1"))
	return &DeviceCookies{key: m.Sum(nil), secure: secure, now: time.Now}
}

func (d *DeviceCookies) mac(parts ...string) string {
	m := hmac.New(sha256.New, d.key)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(m.Sum(nil))
}

// name is the account's cookie name.
func (d *DeviceCookies) name(acct string) string {
	n := "seatd_device_" + d.mac("name", acct)[:20]
	if d.secure {
		n = "__Host-" + n
	}
	return n
}

// Trusted returns the device of the request's valid, unexpired device
// cookie for the account (organization slug and email as signed in
// with), or "" when it has none.
func (d *DeviceCookies) Trusted(r *http.Request, org, email string) string {
	acct := accountKey(org, email)
	c, err := r.Cookie(d.name(acct))
	if err != nil {
		return ""
	}
	nonce, rest, ok1 := strings.Cut(c.Value, ".")
	exp, sig, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || len(nonce) != 32 {
		return ""
	}
	until, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || d.now().Unix() >= until {
		return ""
	}
	if !hmac.Equal([]byte(sig), []byte(d.mac("device", acct, nonce, exp))) {
		return ""
	}
	return nonce
}

// Issue sets a fresh device cookie for the account on w: the browser
// has just signed in to it.
func (d *DeviceCookies) Issue(w http.ResponseWriter, org, email string) {
	acct := accountKey(org, email)
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	nonce := hex.EncodeToString(b)
	until := d.now().Add(deviceCookieLife)
	exp := strconv.FormatInt(until.Unix(), 10)
	// #nosec G124 -- Secure follows COOKIE_SECURE (production requires it).
	http.SetCookie(w, &http.Cookie{Name: d.name(acct), Value: nonce + "." + exp + "." + d.mac("device", acct, nonce, exp),
		Path: "/", Expires: until, MaxAge: int(deviceCookieLife / time.Second), HttpOnly: true, Secure: d.secure,
		SameSite: http.SameSiteLaxMode})
}
