package web

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/web/api"
)

type keyListJSON struct {
	Keys []struct {
		ID         uuid.UUID  `json:"id"`
		Name       string     `json:"name"`
		Role       string     `json:"role"`
		Hint       string     `json:"hint"`
		Key        string     `json:"key"`
		LastUsedAt *time.Time `json:"last_used_at"`
		RevokedAt  *time.Time `json:"revoked_at"`
	} `json:"api_keys"`
}

// TestAPIKeyLifecycle: a key is shown once, listed without its secret and
// with its last use, acts as a session of its role would, and once revoked
// is refused; only the hash is stored.
func TestAPIKeyLifecycle(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	org := s.as(tn.Org, tn.Organizer)

	id, secret := keyOf(t, org, "buyer")
	if !strings.HasPrefix(secret, "seatd_") || len(secret) < 40 {
		t.Fatalf("key %q: want seatd_ and 256 random bits", secret)
	}
	var stored []byte
	if err := s.app.Pool.QueryRow(t.Context(), `SELECT hash FROM api_keys WHERE id = $1`, id).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored), secret) || len(stored) != 32 {
		t.Fatalf("stored %d bytes; want the 32-byte SHA-256 only", len(stored))
	}

	var list keyListJSON
	org.do("GET", "/api/v1/api-keys", nil).want(t, http.StatusOK).json(t, &list)
	if len(list.Keys) != 1 || list.Keys[0].ID != id || list.Keys[0].Key != "" || list.Keys[0].LastUsedAt != nil ||
		!strings.HasPrefix(secret, list.Keys[0].Hint) {
		t.Fatalf("list: %+v", list.Keys)
	}

	k := s.withKey(secret)
	var me api.AccountJSON
	k.do("GET", "/api/v1/me", nil).want(t, http.StatusOK).json(t, &me)
	if me.Org.ID != tn.Org.ID || me.Org.Slug != tn.Org.Slug || me.User.Role != "buyer" || me.User.Email != tn.Organizer.Email {
		t.Fatalf("me with key: %+v", me)
	}
	r := k.do("POST", "/api/v1/events/"+ev.ID.String()+"/holds", map[string]string{"seat_id": seats[0].String()}).want(t, http.StatusCreated)
	if r.header.Get("Set-Cookie") != "" {
		t.Fatalf("a key request got a cookie: %s", r.header.Get("Set-Cookie"))
	}
	org.do("GET", "/api/v1/api-keys", nil).want(t, http.StatusOK).json(t, &list)
	if list.Keys[0].LastUsedAt == nil {
		t.Fatal("last use not recorded")
	}

	org.do("DELETE", "/api/v1/api-keys/"+id.String(), nil).want(t, http.StatusOK)
	k.do("GET", "/api/v1/events", nil).wantErr(t, http.StatusUnauthorized, "unauthorized")
	org.do("GET", "/api/v1/api-keys", nil).want(t, http.StatusOK).json(t, &list)
	if list.Keys[0].RevokedAt == nil {
		t.Fatal("revocation not listed")
	}

	// Keys that are not ours, malformed, or another scheme.
	for _, h := range []string{"Bearer seatd_" + strings.Repeat("A", 43), "Bearer nope", "Bearer ", "Bearer " + strings.Repeat("x", 5000)} {
		s.client().do("GET", "/api/v1/events", nil, "Authorization", h).wantErr(t, http.StatusUnauthorized, "unauthorized")
	}
}

// TestAPIKeyRoles: a key acts with its role exactly as a session would: a
// box-office key cannot do an organizer's things, a buyer key cannot see
// staff data, and only organizers make keys. Bad input writes nothing.
func TestAPIKeyRoles(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	org := s.as(tn.Org, tn.Organizer)
	_, box := keyOf(t, org, "box_office")
	_, buyerKey := keyOf(t, org, "buyer")
	bo, b := s.withKey(box), s.withKey(buyerKey)
	e := "/api/v1/events/" + ev.ID.String()

	bo.do("GET", e+"/occupancy", nil).want(t, http.StatusOK)
	bo.do("POST", e+"/seats/"+seats[1].String()+"/block", nil).want(t, http.StatusOK)
	for _, c := range []struct{ method, path string }{
		{"GET", e + "/registry"}, {"POST", e + "/registry/reconcile"}, {"GET", "/api/v1/api-keys"}, {"POST", "/api/v1/api-keys"},
	} {
		bo.do(c.method, c.path, map[string]string{"name": "x", "role": "organizer"}).wantErr(t, http.StatusForbidden, "forbidden")
	}
	b.do("GET", e+"/occupancy", nil).wantErr(t, http.StatusForbidden, "forbidden")
	bo.do("POST", e+"/holds", map[string]string{"seat_id": seats[0].String()}).wantErr(t, http.StatusForbidden, "forbidden")
	b.do("POST", e+"/holds", map[string]string{"seat_id": seats[0].String()}).want(t, http.StatusCreated)
	s.as(tn.Org, tn.BoxOffice).do("POST", "/api/v1/api-keys", map[string]string{"name": "x", "role": "organizer"}).
		wantErr(t, http.StatusForbidden, "forbidden")

	var before int
	_ = s.app.Pool.QueryRow(t.Context(), `SELECT count(*) FROM api_keys WHERE org_id = $1`, tn.Org.ID).Scan(&before)
	for _, body := range []any{
		map[string]string{"name": "", "role": "buyer"},
		map[string]string{"name": "x", "role": "admin"},
		map[string]string{"name": strings.Repeat("n", 101), "role": "buyer"},
		map[string]any{"name": "x", "role": "buyer", "org_id": uuid.NewString()},
	} {
		r := org.do("POST", "/api/v1/api-keys", body).wantErr(t, http.StatusUnprocessableEntity, "invalid")
		if len(r.Fields) == 0 {
			t.Fatalf("%v: no fields named", body)
		}
	}
	var after int
	_ = s.app.Pool.QueryRow(t.Context(), `SELECT count(*) FROM api_keys WHERE org_id = $1`, tn.Org.ID).Scan(&after)
	if after != before {
		t.Fatalf("refused requests wrote keys: %d -> %d", before, after)
	}
}

// TestAPIKeyCrossOrigin: a key request passes the cross-site check (it
// carries no ambient credential and never reads the cookie), while the
// same request on a cookie session is still refused.
func TestAPIKeyCrossOrigin(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	org := s.as(tn.Org, tn.Organizer)
	_, secret := keyOf(t, org, "organizer")
	evil := []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}
	path := "/api/v1/events/" + ev.ID.String() + "/seats/" + seats[0].String() + "/block"

	org.do("POST", path, nil, evil...).wantErr(t, http.StatusForbidden, "forbidden")
	s.withKey(secret).do("POST", path, nil, evil...).want(t, http.StatusOK)
	// A cookie and a bad key: the key decides, the cookie is not used.
	org.do("POST", "/api/v1/events/"+ev.ID.String()+"/seats/"+seats[1].String()+"/block", nil,
		append(evil, "Authorization", "Bearer seatd_bad")...).wantErr(t, http.StatusUnauthorized, "unauthorized")
}

// TestAPIKeyRevokedEverywhere: a key revoked through one process is
// refused by another process (its own pool, Redis client, bus and key
// cache) within a second.
func TestAPIKeyRevokedEverywhere(t *testing.T) {
	t.Parallel()
	x := newTestServer(t, nil)
	y := serveApp(t, testenv.App(t, func(c *config.Config) { c.PGMaxConns = 8; generousLimits(c) }), options{})
	tn := testenv.NewTenant(t, x.app, 1)
	org := x.as(tn.Org, tn.Organizer)
	id, secret := keyOf(t, org, "box_office")
	ky := y.withKey(secret)
	ky.do("GET", "/api/v1/events", nil).want(t, http.StatusOK) // cached in y now

	start := time.Now()
	org.do("DELETE", "/api/v1/api-keys/"+id.String(), nil).want(t, http.StatusOK)
	testsvc.Eventually(t, time.Second, "the revoked key refused by the other process", func() bool {
		return ky.do("GET", "/api/v1/events", nil).status == http.StatusUnauthorized
	})
	t.Logf("revoked key refused by the other process after %s", time.Since(start).Round(time.Millisecond))
}

// TestAPIKeyFollowsCreator: a key stops working (within the per-process
// cache's second) when its creator is disabled or is no longer an
// organizer.
func TestAPIKeyFollowsCreator(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	for _, change := range []string{"disabled", "demoted"} {
		tn := testenv.NewTenant(t, s.app, 1)
		_, secret := keyOf(t, s.as(tn.Org, tn.Organizer), "box_office")
		k := s.withKey(secret)
		k.do("GET", "/api/v1/events", nil).want(t, http.StatusOK)
		var err error
		if change == "disabled" {
			_, err = s.app.Store.Accounts.DisableUser(t.Context(), tn.Org.ID, tn.Organizer.Email)
		} else {
			_, err = s.app.Store.Accounts.SetUserRole(t.Context(), tn.Org.ID, tn.Organizer.Email, "buyer")
		}
		if err != nil {
			t.Fatal(err)
		}
		testsvc.Eventually(t, 2*time.Second, "the key of a "+change+" creator refused", func() bool {
			return k.do("GET", "/api/v1/events", nil).status == http.StatusUnauthorized
		})
	}
}

// TestAPIKeyRateLimit: requests past a key's limit per minute are 429
// with Retry-After; other keys are not affected.
func TestAPIKeyRateLimit(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, func(c *config.Config) { c.APIKeyRatePerMinute = 3 })
	tn := testenv.NewTenant(t, s.app, 1)
	org := s.as(tn.Org, tn.Organizer)
	_, k1 := keyOf(t, org, "buyer")
	_, k2 := keyOf(t, org, "buyer")
	c1 := s.withKey(k1)
	var last response
	for range 4 {
		last = c1.do("GET", "/api/v1/events", nil)
	}
	// The minute may turn between requests; then a fifth is over again.
	if last.status != http.StatusTooManyRequests {
		for range 4 {
			last = c1.do("GET", "/api/v1/events", nil)
		}
	}
	last.wantErr(t, http.StatusTooManyRequests, "rate_limited")
	if last.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	s.withKey(k2).do("GET", "/api/v1/events", nil).want(t, http.StatusOK)
}

// TestAPIKeysPage: the organizer's page makes a key (shown once, in that
// answer only), lists it and revokes it; other roles cannot open it.
func TestAPIKeysPage(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	org := s.as(tn.Org, tn.Organizer)
	form := func(v string) raw { return raw{contentType: "application/x-www-form-urlencoded", body: []byte(v)} }

	r := org.do("POST", "/admin/api-keys", form("name=ticketing+sync&role=box_office")).want(t, http.StatusCreated)
	m := regexp.MustCompile(`value="(seatd_[A-Za-z0-9_-]+)"`).FindSubmatch(r.body)
	if m == nil {
		t.Fatalf("no key shown: %s", r.body)
	}
	secret := string(m[1])
	s.withKey(secret).do("GET", "/api/v1/events/"+uuid.NewString()+"/occupancy", nil).wantErr(t, http.StatusNotFound, "not_found")
	page := org.do("GET", "/admin/api-keys", nil).want(t, http.StatusOK)
	if !strings.Contains(string(page.body), "ticketing sync") || strings.Contains(string(page.body), secret) {
		t.Fatal("the list must name the key and never show its secret again")
	}
	var id uuid.UUID
	if err := s.app.Pool.QueryRow(t.Context(), `SELECT id FROM api_keys WHERE org_id = $1`, tn.Org.ID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	org.do("POST", "/admin/api-keys/"+id.String()+"/revoke", form("")).want(t, http.StatusSeeOther)
	s.withKey(secret).do("GET", "/api/v1/events", nil).wantErr(t, http.StatusUnauthorized, "unauthorized")
	if !strings.Contains(string(org.do("GET", "/admin/api-keys", nil).body), "revoked") {
		t.Fatal("revocation not shown")
	}
	s.as(tn.Org, tn.BoxOffice).do("GET", "/admin/api-keys", nil).want(t, http.StatusForbidden)
	org.do("POST", "/admin/api-keys", form("name=&role=buyer")).want(t, http.StatusUnprocessableEntity)

	// Scopes ticked and an expiry in UTC limit the key as the API's
	// fields do; what the API refuses, the page refuses, making nothing.
	if !strings.Contains(string(page.body), `name="scopes" value="box_office"`) || !strings.Contains(string(page.body), `name="expires_at"`) {
		t.Fatal("the form offers no scopes or expiry")
	}
	expires := time.Now().UTC().Add(48 * time.Hour).Truncate(time.Minute)
	org.do("POST", "/admin/api-keys", form("name=reader&role=organizer&scopes=read&scopes=holds&expires_at="+
		url.QueryEscape(expires.Format("2006-01-02T15:04")))).want(t, http.StatusCreated)
	// A browser may send seconds too.
	expiresSec := expires.Add(17 * time.Second)
	org.do("POST", "/admin/api-keys", form("name=seconds&role=buyer&expires_at="+
		url.QueryEscape(expiresSec.Format("2006-01-02T15:04:05")))).want(t, http.StatusCreated)
	var gotSec time.Time
	if err := s.app.Pool.QueryRow(t.Context(), `SELECT expires_at FROM api_keys WHERE org_id = $1 AND name = 'seconds'`,
		tn.Org.ID).Scan(&gotSec); err != nil || !gotSec.Equal(expiresSec) {
		t.Fatalf("key made with an expiry in seconds expiring %v (%v), want %v", gotSec, err, expiresSec)
	}
	var scopes []string
	var got time.Time
	if err := s.app.Pool.QueryRow(t.Context(), `SELECT scopes, expires_at FROM api_keys WHERE org_id = $1 AND name = 'reader'`,
		tn.Org.ID).Scan(&scopes, &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(scopes, ",") != "read,holds" || !got.Equal(expires) {
		t.Fatalf("key made with scopes %v expiring %v, want read,holds expiring %v", scopes, got, expires)
	}
	for _, bad := range []string{
		"name=x&role=buyer&scopes=admin",
		"name=x&role=buyer&scopes=everything",
		"name=x&role=buyer&expires_at=tomorrow",
		"name=x&role=buyer&expires_at=" + url.QueryEscape(time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04")),
	} {
		r := org.do("POST", "/admin/api-keys", form(bad)).want(t, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.body), "<html") {
			t.Errorf("%s: answered %.80q, want a page", bad, r.body)
		}
	}
	var n int
	if err := s.app.Pool.QueryRow(t.Context(), `SELECT count(*) FROM api_keys WHERE org_id = $1 AND name = 'x'`, tn.Org.ID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("refused forms made %d keys (%v)", n, err)
	}
}
