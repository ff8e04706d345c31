package web

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/web/api"
	"seatd/web/live"
)

// linkToken waits for the newest mail to addr whose subject contains
// subject, and returns it with the token of its link to path.
func linkToken(t *testing.T, mp *testsvc.Mailpit, addr, subject, path string) (testsvc.MailMessage, string) {
	t.Helper()
	var id string
	testsvc.Eventually(t, 20*time.Second, "a mail to "+addr+" about "+subject, func() bool {
		for _, m := range mp.To(addr) {
			if strings.Contains(m.Subject, subject) {
				id = m.ID
				return true
			}
		}
		return false
	})
	msg := mp.Message(id)
	if path == "" {
		return msg, ""
	}
	m := regexp.MustCompile(regexp.QuoteMeta(path) + `\?token=([A-Za-z0-9_-]+)`).FindStringSubmatch(msg.Text)
	if m == nil || !strings.Contains(msg.HTML, path+"?token="+m[1]) {
		t.Fatalf("mail %q: no %s link in both parts:\n%s", msg.Subject, path, msg.Text)
	}
	return msg, m[1]
}

// signUp signs email up on org's storefront (202) and follows the
// verification link it mails; it returns a client signed in as the new,
// verified buyer.
func signUp(t *testing.T, s *testServer, mp *testsvc.Mailpit, org, email string) *client {
	t.Helper()
	c := s.client()
	c.do("POST", "/o/"+org+"/signup", map[string]string{"email": email, "password": testenv.Password}).want(t, http.StatusAccepted)
	_, token := linkToken(t, mp, strings.ToLower(email), "Confirm your email", "/verify-email")
	c.do("POST", "/verify-email", map[string]string{"token": token}).want(t, http.StatusOK)
	c.login(org, email, testenv.Password)
	return c
}

// TestVerifyEmailBeforeHolding: a buyer who signs up gets a verification
// link (HTML and text parts, through the outbox and Mailpit); until they
// follow it they can sign in and browse but a hold is 403
// email_unverified; opening the link (GET) verifies nothing; posting its
// token verifies once; then holds go through.
func TestVerifyEmailBeforeHolding(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, ownQueues(t))
	testenv.Background(t, s.app)
	mp := testsvc.MailpitFromEnv(t)
	tn := testenv.NewTenant(t, s.app, 0)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 2, 5)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	email := "new-" + uuid.NewString()[:8] + "@x.example"

	c := s.client()
	var st struct{ Status string }
	c.do("POST", "/o/"+tn.Org.Slug+"/signup", map[string]string{"email": email, "password": testenv.Password}).
		want(t, http.StatusAccepted).json(t, &st)
	if st.Status != "verification_sent" || c.cookie() != "" {
		t.Fatalf("signup: %+v, cookie %q: want verification_sent and no session", st, c.cookie())
	}
	var acc api.AccountJSON
	c.login(tn.Org.Slug, email, testenv.Password).json(t, &acc)
	if acc.User.EmailVerified == nil || *acc.User.EmailVerified {
		t.Fatalf("sign-in of an unverified buyer: %+v", acc.User)
	}
	c.do("GET", "/api/v1/events", nil).want(t, http.StatusOK)
	hold := func(seat uuid.UUID) response {
		return c.do("POST", "/api/v1/events/"+ev.ID.String()+"/holds", map[string]string{"seat_id": seat.String()})
	}
	hold(seats[0]).wantErr(t, http.StatusForbidden, "email_unverified")
	// The seat map's click says so in the cart, and holds nothing.
	r := c.do("POST", "/e/"+ev.ID.String()+"/seats/"+seats[0].String()+"/toggle", raw{contentType: "application/x-www-form-urlencoded"})
	if !strings.Contains(string(r.body), "Confirm your email") {
		t.Fatalf("seat click of an unverified buyer: %d %s", r.status, r.body)
	}

	msg, token := linkToken(t, mp, email, "Confirm your email", "/verify-email")
	if msg.HTML == "" || msg.Text == "" {
		t.Fatalf("verification mail parts: text %d bytes, html %d bytes", len(msg.Text), len(msg.HTML))
	}
	// A mail scanner fetching the link spends nothing.
	page := s.client().do("GET", "/verify-email?token="+url.QueryEscape(token), nil).want(t, http.StatusOK)
	if !strings.Contains(string(page.body), `method="post" action="/verify-email"`) {
		t.Fatalf("link page has no confirm form: %s", page.body)
	}
	hold(seats[0]).wantErr(t, http.StatusForbidden, "email_unverified")

	s.client().do("POST", "/verify-email", map[string]string{"token": token}).want(t, http.StatusOK)
	s.client().do("POST", "/verify-email", map[string]string{"token": token}).wantErr(t, http.StatusNotFound, "not_found")
	s.client().do("POST", "/verify-email", map[string]string{"token": "forged-" + token[7:]}).wantErr(t, http.StatusNotFound, "not_found")
	// The session that was open meanwhile holds now.
	hold(seats[0]).want(t, http.StatusCreated)
	var me api.AccountJSON
	c.do("GET", "/api/v1/me", nil).want(t, http.StatusOK).json(t, &me)
	if me.User.EmailVerified == nil || !*me.User.EmailVerified {
		t.Fatalf("me after verifying: %+v", me.User)
	}
	t.Logf("unverified: 403 email_unverified; link GET spends nothing; POST verifies once (then 404); hold 201")
}

// TestVerificationExpires: a link past its 24 hours verifies nothing.
func TestVerificationExpires(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, ownQueues(t))
	testenv.Background(t, s.app)
	mp := testsvc.MailpitFromEnv(t)
	tn := testenv.NewTenant(t, s.app, 0)
	email := "late-" + uuid.NewString()[:8] + "@x.example"
	s.client().do("POST", "/o/"+tn.Org.Slug+"/signup", map[string]string{"email": email, "password": testenv.Password}).
		want(t, http.StatusAccepted)
	_, token := linkToken(t, mp, email, "Confirm your email", "/verify-email")
	if _, err := s.app.Pool.Exec(t.Context(), `UPDATE account_tokens SET expires_at = now() - interval '1 second'
		WHERE org_id = $1`, tn.Org.ID); err != nil {
		t.Fatal(err)
	}
	s.client().do("POST", "/verify-email", map[string]string{"token": token}).wantErr(t, http.StatusNotFound, "not_found")
	var hashed int
	if err := s.app.Pool.QueryRow(t.Context(), `SELECT count(*) FROM account_tokens
		WHERE org_id = $1 AND token_hash = sha256(convert_to($2, 'UTF8'))`, tn.Org.ID, token).Scan(&hashed); err != nil || hashed != 1 {
		t.Fatalf("tokens stored by their SHA-256: %d rows match, %v", hashed, err)
	}
}

// TestSignupRevealsNoAccounts: signing up with the address of an account
// answers exactly as with a new address, changes nothing of the account
// (its password stays), and mails the owner a notice instead of a link.
func TestSignupRevealsNoAccounts(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, ownQueues(t))
	testenv.Background(t, s.app)
	mp := testsvc.MailpitFromEnv(t)
	tn := testenv.NewTenant(t, s.app, 1)
	known := tn.Buyers[0].Email
	fresh := "fresh-" + uuid.NewString()[:8] + "@x.example"

	a := s.client().do("POST", "/o/"+tn.Org.Slug+"/signup", map[string]string{"email": known, "password": "another-password-9"}).
		want(t, http.StatusAccepted)
	b := s.client().do("POST", "/o/"+tn.Org.Slug+"/signup", map[string]string{"email": fresh, "password": "another-password-9"}).
		want(t, http.StatusAccepted)
	if string(a.body) != string(b.body) {
		t.Fatalf("answers differ:\n known %s\n fresh %s", a.body, b.body)
	}
	msg, _ := linkToken(t, mp, known, "Sign-up attempt", "")
	if !strings.Contains(msg.Text, "/login?org="+tn.Org.Slug) || strings.Contains(msg.Text, "token=") {
		t.Fatalf("notice to the owner: %s", msg.Text)
	}
	linkToken(t, mp, fresh, "Confirm your email", "/verify-email")
	s.client().login(tn.Org.Slug, known, testenv.Password)
	s.client().do("POST", "/login", map[string]string{"org": tn.Org.Slug, "email": known, "password": "another-password-9"}).
		wantErr(t, http.StatusUnauthorized, "unauthorized")
	// A form sign-up shows a page, whichever the address.
	form := url.Values{"email": {known}, "password": {testenv.Password}}
	r := s.client().do("POST", "/o/"+tn.Org.Slug+"/signup", raw{contentType: "application/x-www-form-urlencoded", body: []byte(form.Encode())}).
		want(t, http.StatusOK)
	if !strings.Contains(string(r.body), "Check your inbox") {
		t.Fatalf("form sign-up page: %s", r.body)
	}
	t.Logf("signup of a known and a fresh address: the same 202 %s; the known account unchanged", a.body)
}

// TestResendVerification: a signed-in unverified buyer asks for the link
// again, a few times a minute at most; the newest link works.
func TestResendVerification(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, ownQueues(t))
	testenv.Background(t, s.app)
	mp := testsvc.MailpitFromEnv(t)
	tn := testenv.NewTenant(t, s.app, 0)
	email := "again-" + uuid.NewString()[:8] + "@x.example"
	c := s.client()
	c.do("POST", "/o/"+tn.Org.Slug+"/signup", map[string]string{"email": email, "password": testenv.Password}).want(t, http.StatusAccepted)
	c.login(tn.Org.Slug, email, testenv.Password)
	codes := []int{}
	for range 4 {
		codes = append(codes, c.do("POST", "/verify-email/resend", nil).status)
	}
	if codes[0] != http.StatusAccepted || codes[3] != http.StatusTooManyRequests {
		t.Fatalf("resend answers %v: want 202 first and 429 past the limit", codes)
	}
	testsvc.Eventually(t, 20*time.Second, "the resent links", func() bool { return len(mp.To(email)) >= 2 })
	_, token := linkToken(t, mp, email, "Confirm your email", "/verify-email")
	c.do("POST", "/verify-email", map[string]string{"token": token}).want(t, http.StatusOK)
	t.Logf("resend: %v", codes)
}

// TestPasswordReset: 202 whatever the address; the link's page posts the
// new password; a password too short leaves the token good; success ends
// every session of the account, works once, and the new password signs
// in where the old does not.
func TestPasswordReset(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, ownQueues(t))
	testenv.Background(t, s.app)
	mp := testsvc.MailpitFromEnv(t)
	tn := testenv.NewTenant(t, s.app, 1)
	u := tn.Buyers[0]
	phone, laptop := s.as(tn.Org, u), s.as(tn.Org, u)

	ghost := "ghost-" + uuid.NewString()[:8] + "@x.example"
	a := s.client().do("POST", "/password-reset", map[string]string{"org": tn.Org.Slug, "email": ghost}).want(t, http.StatusAccepted)
	b := s.client().do("POST", "/password-reset", map[string]string{"org": tn.Org.Slug, "email": u.Email}).want(t, http.StatusAccepted)
	c := s.client().do("POST", "/password-reset", map[string]string{"org": "no-such-org", "email": u.Email}).want(t, http.StatusAccepted)
	if string(a.body) != string(b.body) || string(b.body) != string(c.body) {
		t.Fatalf("answers differ: %s / %s / %s", a.body, b.body, c.body)
	}
	_, token := linkToken(t, mp, u.Email, "Reset your password", "/password-reset/confirm")
	page := s.client().do("GET", "/password-reset/confirm?token="+url.QueryEscape(token), nil).want(t, http.StatusOK)
	if !strings.Contains(string(page.body), `action="/password-reset/confirm"`) {
		t.Fatalf("reset page: %s", page.body)
	}
	s.client().do("POST", "/password-reset/confirm", map[string]string{"token": token, "password": "short"}).
		wantErr(t, http.StatusUnprocessableEntity, "invalid")
	const newPassword = "a-brand-new-password"
	s.client().do("POST", "/password-reset/confirm", map[string]string{"token": token, "password": newPassword}).want(t, http.StatusOK)
	s.client().do("POST", "/password-reset/confirm", map[string]string{"token": token, "password": newPassword}).
		wantErr(t, http.StatusNotFound, "not_found")
	for _, cl := range []*client{phone, laptop} {
		cl.do("GET", "/api/v1/me", nil).want(t, http.StatusUnauthorized)
	}
	s.client().do("POST", "/login", map[string]string{"org": tn.Org.Slug, "email": u.Email, "password": testenv.Password}).
		wantErr(t, http.StatusUnauthorized, "unauthorized")
	s.client().login(tn.Org.Slug, u.Email, newPassword)
	// Past the limit per address, still no word on whether it exists.
	for _, addr := range []string{u.Email, ghost} {
		var last int
		for range 4 {
			last = s.client().do("POST", "/password-reset", map[string]string{"org": tn.Org.Slug, "email": addr}).status
		}
		if last != http.StatusTooManyRequests {
			t.Fatalf("reset requests for %s past the limit: %d", addr, last)
		}
	}
	t.Logf("reset: 202 for known, unknown and no org alike; single use; other sessions 401 after")
}

const (
	firefoxUA = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
	iphoneUA  = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
)

// loginUA signs c in with a User-Agent.
func loginUA(t *testing.T, c *client, org, email, ua string) {
	t.Helper()
	c.do("POST", "/login", map[string]string{"org": org, "email": email, "password": testenv.Password}, "User-Agent", ua).
		want(t, http.StatusOK)
}

type sessionsJSON struct {
	Sessions []api.DeviceJSON `json:"sessions"`
}

// TestSessionDevices: a user's sessions are listed with device names,
// truncated addresses and the current one marked; one is ended by id
// (its cookie is refused at once, the current one cannot be ended there),
// then all others; API keys cannot touch sessions.
func TestSessionDevices(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	u := tn.Buyers[0]
	laptop, phone, third := s.client(), s.client(), s.client()
	loginUA(t, laptop, tn.Org.Slug, u.Email, firefoxUA)
	loginUA(t, phone, tn.Org.Slug, u.Email, iphoneUA)
	loginUA(t, third, tn.Org.Slug, u.Email, "curl/8.5.0")

	var list sessionsJSON
	laptop.do("GET", "/api/v1/me/sessions", nil).want(t, http.StatusOK).json(t, &list)
	if len(list.Sessions) != 3 {
		t.Fatalf("sessions %+v: want 3", list.Sessions)
	}
	byDevice := map[string]api.DeviceJSON{}
	for _, d := range list.Sessions {
		byDevice[d.Device] = d
		if d.IP != "127.0.0.0/24" || d.CreatedAt.IsZero() || d.LastSeenAt.Before(d.CreatedAt.Add(-time.Second)) {
			t.Fatalf("session %+v: want ip 127.0.0.0/24 and times", d)
		}
	}
	cur, ok := byDevice["Firefox on Linux"]
	if !ok || !cur.Current || byDevice["Safari on iPhone"].Current || byDevice["curl"].ID == uuid.Nil {
		t.Fatalf("devices %+v", byDevice)
	}
	laptop.do("DELETE", "/api/v1/me/sessions/"+cur.ID.String(), nil).wantErr(t, http.StatusConflict, "conflict")
	laptop.do("DELETE", "/api/v1/me/sessions/"+uuid.NewString(), nil).wantErr(t, http.StatusNotFound, "not_found")
	// Another user cannot end this user's sessions.
	s.as(tn.Org, tn.Organizer).do("DELETE", "/api/v1/me/sessions/"+byDevice["Safari on iPhone"].ID.String(), nil).
		wantErr(t, http.StatusNotFound, "not_found")
	laptop.do("DELETE", "/api/v1/me/sessions/"+byDevice["Safari on iPhone"].ID.String(), nil).want(t, http.StatusNoContent)
	phone.do("GET", "/api/v1/me", nil).want(t, http.StatusUnauthorized)
	third.do("GET", "/api/v1/me", nil).want(t, http.StatusOK)

	var ended struct{ Ended int }
	laptop.do("POST", "/api/v1/me/sessions/revoke-others", nil).want(t, http.StatusOK).json(t, &ended)
	if ended.Ended != 1 {
		t.Fatalf("revoke-others ended %d, want 1", ended.Ended)
	}
	third.do("GET", "/api/v1/me", nil).want(t, http.StatusUnauthorized)
	laptop.do("GET", "/api/v1/me", nil).want(t, http.StatusOK)
	laptop.do("GET", "/api/v1/me/sessions", nil).want(t, http.StatusOK).json(t, &list)
	if len(list.Sessions) != 1 || !list.Sessions[0].Current {
		t.Fatalf("after revoke-others: %+v", list.Sessions)
	}
	// The page lists them too.
	if p := laptop.do("GET", "/me/devices", nil).want(t, http.StatusOK); !strings.Contains(string(p.body), "Firefox on Linux") {
		t.Fatalf("devices page: %s", p.body)
	}
	// An API key has no sessions, and may not end its creator's.
	_, secret := keyOf(t, s.as(tn.Org, tn.Organizer), "organizer")
	s.withKey(secret).do("GET", "/api/v1/me/sessions", nil).wantErr(t, http.StatusForbidden, "forbidden")
	s.withKey(secret).do("POST", "/api/v1/me/sessions/revoke-others", nil).wantErr(t, http.StatusForbidden, "forbidden")
}

// TestSessionCap: past the cap of sessions per account, a sign-in ends
// the oldest session, so one account cannot gather sessions (and their
// sockets) without bound.
func TestSessionCap(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, func(c *config.Config) { c.MaxSessionsPerUser = 3 })
	tn := testenv.NewTenant(t, s.app, 1)
	var cs []*client
	for range 5 {
		cs = append(cs, s.as(tn.Org, tn.Buyers[0]))
	}
	for i, c := range cs {
		want := http.StatusOK
		if i < 2 {
			want = http.StatusUnauthorized
		}
		c.do("GET", "/api/v1/me", nil).want(t, want)
	}
	var list sessionsJSON
	cs[4].do("GET", "/api/v1/me/sessions", nil).want(t, http.StatusOK).json(t, &list)
	if len(list.Sessions) != 3 {
		t.Fatalf("sessions after 5 sign-ins with a cap of 3: %d", len(list.Sessions))
	}
}

// TestSignupPolicy: organizers set the sign-up policy; closed and
// invite-only storefronts refuse sign-ups with 403 signup_closed.
func TestSignupPolicy(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	org := s.as(tn.Org, tn.Organizer)
	signup := func() response {
		return s.client().do("POST", "/o/"+tn.Org.Slug+"/signup",
			map[string]string{"email": "p-" + uuid.NewString()[:8] + "@x.example", "password": testenv.Password})
	}
	var o api.OrgJSON
	org.do("GET", "/api/v1/org", nil).want(t, http.StatusOK).json(t, &o)
	if o.SignupPolicy != "open" || o.Slug != tn.Org.Slug {
		t.Fatalf("org %+v", o)
	}
	signup().want(t, http.StatusAccepted)
	for _, p := range []string{"closed", "invite_only"} {
		org.do("PATCH", "/api/v1/org", map[string]string{"signup_policy": p}).want(t, http.StatusOK).json(t, &o)
		if o.SignupPolicy != p {
			t.Fatalf("after PATCH %s: %+v", p, o)
		}
		signup().wantErr(t, http.StatusForbidden, "signup_closed")
	}
	org.do("PATCH", "/api/v1/org", map[string]string{"signup_policy": "everyone"}).wantErr(t, http.StatusUnprocessableEntity, "invalid")
	s.as(tn.Org, tn.Buyers[0]).do("PATCH", "/api/v1/org", map[string]string{"signup_policy": "open"}).wantErr(t, http.StatusForbidden, "forbidden")
	org.do("PATCH", "/api/v1/org", map[string]string{"signup_policy": "open"}).want(t, http.StatusOK)
	signup().want(t, http.StatusAccepted)
	// The settings page sets it too.
	if p := org.do("GET", "/admin/settings", nil).want(t, http.StatusOK); !strings.Contains(string(p.body), `value="open" checked`) {
		t.Fatalf("settings page: %s", p.body)
	}
	form := url.Values{"signup_policy": {"closed"}}
	org.do("POST", "/admin/settings", raw{contentType: "application/x-www-form-urlencoded", body: []byte(form.Encode())}).
		want(t, http.StatusSeeOther)
	signup().wantErr(t, http.StatusForbidden, "signup_closed")
}

// TestEndedDeviceSocketsClose: a device signed out from another (one by
// id, or all others) has its live sockets closed on every process, as a
// logout does.
func TestEndedDeviceSocketsClose(t *testing.T) {
	s1 := newTestServer(t, nil)
	s2 := serveApp(t, testenv.App(t, func(c *config.Config) {
		c.PGMaxConns = 8
		generousLimits(c)
	}), options{})
	tn := testenv.NewTenant(t, s1.app, 1)
	ev := testenv.NewEvent(t, s1.app, tn.Org.ID, 1, 2, 4)
	u := tn.Buyers[0]
	laptop := s1.as(tn.Org, u)
	for _, byID := range []bool{true, false} {
		phone := s1.as(tn.Org, u)
		a, _, err := s1.socket(t, phone, ev.ID, s1.ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := s2.socket(t, phone, ev.ID, s2.ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		if byID {
			var list sessionsJSON
			laptop.do("GET", "/api/v1/me/sessions", nil).want(t, http.StatusOK).json(t, &list)
			for _, d := range list.Sessions {
				if !d.Current {
					laptop.do("DELETE", "/api/v1/me/sessions/"+d.ID.String(), nil).want(t, http.StatusNoContent)
				}
			}
		} else {
			laptop.do("POST", "/api/v1/me/sessions/revoke-others", nil).want(t, http.StatusOK)
		}
		for _, conn := range []*websocket.Conn{a, b} {
			if code, _ := waitClosed(t, conn, 2*time.Second); code != live.CodeSessionEnded {
				t.Fatalf("ended device's socket closed with %d, want %d", code, live.CodeSessionEnded)
			}
		}
		phone.do("GET", "/api/v1/me", nil).want(t, http.StatusUnauthorized)
	}
	laptop.do("GET", "/api/v1/me", nil).want(t, http.StatusOK)
}
