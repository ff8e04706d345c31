package session

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
)

// Devices: every signed-in session is a device of its user (migration
// 034's user_sessions), named from its User-Agent, with the address it
// was last seen from and when. A user lists them and ends one or all
// others; the ends are deletes of session rows, announced to every
// process like a logout (sessionend.go), so their sockets close
// everywhere. Sign-in ends the oldest sessions past the cap per user.

// DeviceStore keeps the device index; *store.Devices satisfies it.
type DeviceStore interface {
	Add(ctx context.Context, org, user uuid.UUID, token, device, ip string, max int) ([]string, error)
	List(ctx context.Context, org, user uuid.UUID) ([]store.Device, error)
	End(ctx context.Context, org, user, id uuid.UUID) (string, error)
	EndOthers(ctx context.Context, org, user uuid.UUID, keep string) ([]string, error)
	Touch(ctx context.Context, ts []store.SessionTouch) error
}

// seenEvery is how often a session's last-seen time is written at most
// (spread: each session's between once and one and a half times it):
// the device list shows when a device was last seen to within that, and
// a crowd of sessions costs a row update each per period.
const seenEvery = 5 * time.Minute

// seenMax bounds the sessions whose last write is remembered, as
// sessionCacheMax bounds the cached sessions (a waiting room of 100 000
// visitors, twice). When it is reached, the entries older than seenEvery
// go first: they are due anyway. Only if every entry is recent are all
// forgotten, which costs one write each.
const seenMax = sessionCacheMax

// seen remembers when this process last wrote each session's last-seen
// time, so a busy session costs one write a minute, not one a request.
type seen struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// due reports whether token's last-seen time should be written now, and
// notes that it is.
func (s *seen) due(token string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.last[token]; ok && now.Sub(t) < spread(token, seenEvery) {
		return false
	}
	if len(s.last) >= seenMax {
		for t, at := range s.last {
			if now.Sub(at) >= spread(t, seenEvery) {
				delete(s.last, t)
			}
		}
		if len(s.last) >= seenMax {
			clear(s.last)
		}
	}
	s.last[token] = now
	return true
}

// recordDevice adds the request's new session (stored under token) to
// its user's devices and ends the sessions past the cap.
func (s *Sessions) recordDevice(r *http.Request, acct Account, token string) error {
	ended, err := s.devices.Add(r.Context(), acct.Org, acct.User, token, DeviceName(r.UserAgent()),
		s.clientPrefix(r), s.maxPerUser)
	if err != nil {
		return err
	}
	s.Ended(ended)
	return nil
}

// touch queues the last-seen time and address of the request's session
// (touches), at most every seenEvery per session and process; the
// request does not wait for the write.
func (s *Sessions) touch(r *http.Request, token string) {
	if !s.seen.due(token, time.Now()) {
		return
	}
	s.touches.add(store.SessionTouch{Token: token, Seen: true, IP: s.clientPrefix(r)})
}

// clientPrefix is the request's client address as devices show it:
// IPv4 by its /24, IPv6 by its /64 — enough to tell a phone from a
// laptop at another place, not enough to locate anyone.
func (s *Sessions) clientPrefix(r *http.Request) string {
	if s.clientIP == nil {
		return ""
	}
	a := s.clientIP(r)
	switch {
	case !a.IsValid():
		return ""
	case a.Is4():
		return netip.PrefixFrom(a, 24).Masked().String()
	default:
		return netip.PrefixFrom(a, 64).Masked().String()
	}
}

// Ended closes the sockets of sessions that were ended here (their stored
// tokens) and forgets this process's copies at once; other processes
// hear of the ends from Postgres.
func (s *Sessions) Ended(tokens []string) {
	if len(tokens) == 0 {
		return
	}
	s.store.ended(tokens)
	for _, t := range tokens {
		s.hub.CloseSession(t)
	}
}

// Device is a session of the request's user, as they see it.
type Device struct {
	store.Device
	// Current: the session of the request itself.
	Current bool
}

// Devices lists the signed-in sessions of a's user, newest first.
func (s *Sessions) Devices(ctx context.Context, a hold.Actor) ([]Device, error) {
	ds, err := s.devices.List(ctx, a.Org, a.User)
	if err != nil {
		return nil, err
	}
	cur := s.StoredToken(ctx)
	out := make([]Device, len(ds))
	for i, d := range ds {
		out[i] = Device{Device: d, Current: d.Token == cur}
	}
	return out, nil
}

// EndDevice ends one session of a's user, by its device id. Ending the
// request's own session is signing out: use SignOut for that (the cookie
// must go too), so it is refused here.
func (s *Sessions) EndDevice(ctx context.Context, a hold.Actor, id uuid.UUID) error {
	if s.isCurrent(ctx, a, id) {
		return apperr.E(apperr.Conflict, "this is the session you are using: sign out instead")
	}
	token, err := s.devices.End(ctx, a.Org, a.User, id)
	if err != nil {
		return err
	}
	s.Ended([]string{token})
	return nil
}

// isCurrent reports whether device id is the request's own session.
func (s *Sessions) isCurrent(ctx context.Context, a hold.Actor, id uuid.UUID) bool {
	ds, err := s.Devices(ctx, a)
	if err != nil {
		return false
	}
	for _, d := range ds {
		if d.ID == id {
			return d.Current
		}
	}
	return false
}

// EndOthers ends every session of a's user but the request's own, and
// reports how many ended.
func (s *Sessions) EndOthers(ctx context.Context, a hold.Actor) (int, error) {
	ended, err := s.devices.EndOthers(ctx, a.Org, a.User, s.StoredToken(ctx))
	if err != nil {
		return 0, err
	}
	s.Ended(ended)
	return len(ended), nil
}

// MayHold refuses a hold by a buyer signed in with a session whose email
// is not verified yet (403 email_unverified); staff and API keys are not
// asked. A session remembers a verification once it has seen it, so a
// verified buyer costs one read per session, not one per hold.
func (s *Sessions) MayHold(ctx context.Context, a hold.Actor) error {
	if a.Role != hold.RoleBuyer {
		return nil
	}
	if _, ok := APIKeyFrom(ctx); ok {
		return nil
	}
	if s.sm.GetString(ctx, sessVerified) == "1" {
		return nil
	}
	ok, err := s.accounts.EmailVerified(ctx, a.Org, a.User)
	if err != nil {
		return err
	}
	if !ok {
		return apperr.E(apperr.EmailUnverified, "confirm your email address first: follow the link we mailed you")
	}
	s.sm.Put(ctx, sessVerified, "1")
	return nil
}

// Verified reports whether the request's session has seen its user's
// email verified (pages show a reminder when not).
func (s *Sessions) Verified(ctx context.Context) bool {
	return s.sm.GetString(ctx, sessVerified) == "1"
}

// DeviceName is a short name of the device a User-Agent describes:
// "Firefox on Linux", "Safari on iPhone", "curl". Nothing in it is
// trusted; it only helps a person tell their sessions apart.
func DeviceName(ua string) string {
	browser := ""
	for _, b := range []struct{ token, name string }{
		{"Edg/", "Edge"}, {"OPR/", "Opera"}, {"SamsungBrowser/", "Samsung Internet"}, {"Firefox/", "Firefox"},
		{"FxiOS/", "Firefox"}, {"CriOS/", "Chrome"}, {"Chrome/", "Chrome"}, {"Safari/", "Safari"},
		{"curl/", "curl"}, {"Go-http-client/", "Go client"}, {"python-requests/", "Python"},
	} {
		if strings.Contains(ua, b.token) {
			browser = b.name
			break
		}
	}
	system := ""
	for _, o := range []struct{ token, name string }{
		{"iPhone", "iPhone"}, {"iPad", "iPad"}, {"Android", "Android"}, {"Windows", "Windows"},
		{"Mac OS X", "macOS"}, {"Macintosh", "macOS"}, {"CrOS", "ChromeOS"}, {"Linux", "Linux"},
	} {
		if strings.Contains(ua, o.token) {
			system = o.name
			break
		}
	}
	switch {
	case browser != "" && system != "":
		return browser + " on " + system
	case browser != "":
		return browser
	case system != "":
		return "Browser on " + system
	}
	return "Unknown device"
}
