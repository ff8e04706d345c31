package web

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// scopedKey is a key made through the API, as answered.
type scopedKey struct {
	ID           uuid.UUID  `json:"id"`
	Key          string     `json:"key"`
	Scopes       []string   `json:"scopes"`
	ExpiresAt    *time.Time `json:"expires_at"`
	CreatedByKey *uuid.UUID `json:"created_by_key"`
}

// makeKey makes a key through c (a session or a key) and answers it.
func makeKey(t *testing.T, c *client, body map[string]any) scopedKey {
	t.Helper()
	var k scopedKey
	c.do("POST", "/api/v1/api-keys", body).want(t, http.StatusCreated).json(t, &k)
	return k
}

// TestAPIKeyScopes: a key does only what its scopes cover (403 naming
// the scope needed otherwise); without scopes it has all its role allows;
// a scope the role does not allow is 422.
func TestAPIKeyScopes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 0)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 2)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	org := s.as(tn.Org, tn.Organizer)
	e := "/api/v1/events/" + ev.ID.String()

	all := makeKey(t, org, map[string]any{"name": "all", "role": "organizer"})
	if len(all.Scopes) != 4 || all.ExpiresAt != nil || all.CreatedByKey != nil {
		t.Fatalf("a key without scopes: %+v, want all four, no expiry, made by a session", all)
	}
	reader := s.withKey(makeKey(t, org, map[string]any{"name": "r", "role": "organizer", "scopes": []string{"read"}}).Key)
	reader.do("GET", e, nil).want(t, http.StatusOK)
	reader.do("GET", "/api/v1/webhooks", nil).want(t, http.StatusOK)
	for _, req := range []struct{ method, path string }{
		{"PATCH", e}, {"POST", e + "/seats/" + seats[0].String() + "/block"}, {"POST", e + "/holds"},
		{"POST", "/api/v1/api-keys"}, {"POST", "/api/v1/webhooks"},
	} {
		if f := reader.do(req.method, req.path, map[string]any{}).wantErr(t, http.StatusForbidden, "forbidden"); f.Fields["scope"] == "" {
			t.Errorf("%s %s with a read key: fields %v, want the scope named", req.method, req.path, f.Fields)
		}
	}
	box := s.withKey(makeKey(t, org, map[string]any{"name": "b", "role": "organizer", "scopes": []string{"read", "box_office"}}).Key)
	box.do("POST", e+"/seats/"+seats[0].String()+"/block", nil).want(t, http.StatusOK)
	box.do("PATCH", e, map[string]any{"name": "x"}).wantErr(t, http.StatusForbidden, "forbidden")
	s.withKey(all.Key).do("PATCH", e, map[string]any{"name": "Renamed"}).want(t, http.StatusOK)

	org.do("POST", "/api/v1/api-keys", map[string]any{"name": "x", "role": "buyer", "scopes": []string{"admin"}}).
		wantErr(t, http.StatusUnprocessableEntity, "invalid")
	org.do("POST", "/api/v1/api-keys", map[string]any{"name": "x", "role": "buyer", "scopes": []string{"everything"}}).
		wantErr(t, http.StatusUnprocessableEntity, "invalid")
}

// TestAPIKeyExpiry: a key past its expiry is refused 401 like a revoked
// one; an expiry in the past is refused at creation.
func TestAPIKeyExpiry(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 0)
	org := s.as(tn.Org, tn.Organizer)
	org.do("POST", "/api/v1/api-keys", map[string]any{"name": "x", "role": "buyer", "expires_at": time.Now().Add(-time.Minute)}).
		wantErr(t, http.StatusUnprocessableEntity, "invalid")
	k := makeKey(t, org, map[string]any{"name": "soon", "role": "buyer", "expires_at": time.Now().Add(time.Hour)})
	if k.ExpiresAt == nil {
		t.Fatal("expires_at not answered")
	}
	c := s.withKey(k.Key)
	c.do("GET", "/api/v1/events", nil).want(t, http.StatusOK)
	if _, err := s.app.Pool.Exec(t.Context(), `UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, k.ID); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "the expired key refused", func() bool {
		return c.do("GET", "/api/v1/events", nil).status == http.StatusUnauthorized
	})
}

// TestAPIKeyContainment: a key cannot make a key with a scope it lacks or
// an expiry past its own (the default is its own); revoking a key revokes
// the keys it made, theirs in turn, and deletes the webhook endpoints any
// of them registered; keys made from a session and their endpoints stay.
func TestAPIKeyContainment(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 0)
	org := s.as(tn.Org, tn.Organizer)
	hook := map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"hold.created"}}

	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	narrow := s.withKey(makeKey(t, org, map[string]any{"name": "n", "role": "organizer", "scopes": []string{"read", "admin"},
		"expires_at": until}).Key)
	child := makeKey(t, narrow, map[string]any{"name": "c", "role": "buyer"})
	if len(child.Scopes) != 1 || child.Scopes[0] != "read" || child.ExpiresAt == nil || !child.ExpiresAt.Equal(until) {
		t.Errorf("a buyer key made by a read+admin key: %+v, want scopes [read] and the maker's expiry %v", child, until)
	}
	narrow.do("POST", "/api/v1/api-keys", map[string]any{"name": "x", "role": "buyer", "scopes": []string{"read", "holds"}}).
		wantErr(t, http.StatusForbidden, "forbidden")
	narrow.do("POST", "/api/v1/api-keys", map[string]any{"name": "x", "role": "buyer", "expires_at": until.Add(time.Minute)}).
		wantErr(t, http.StatusForbidden, "forbidden")

	root := makeKey(t, org, map[string]any{"name": "leaked", "role": "organizer"})
	kid := makeKey(t, s.withKey(root.Key), map[string]any{"name": "kid", "role": "organizer"})
	grandkid := makeKey(t, s.withKey(kid.Key), map[string]any{"name": "grandkid", "role": "box_office"})
	if kid.CreatedByKey == nil || *kid.CreatedByKey != root.ID || grandkid.CreatedByKey == nil || *grandkid.CreatedByKey != kid.ID {
		t.Fatalf("made by: kid %v, grandkid %v", kid.CreatedByKey, grandkid.CreatedByKey)
	}
	var kidHook, ownHook struct {
		ID uuid.UUID `json:"id"`
	}
	s.withKey(kid.Key).do("POST", "/api/v1/webhooks", hook).want(t, http.StatusCreated).json(t, &kidHook)
	org.do("POST", "/api/v1/webhooks", hook).want(t, http.StatusCreated).json(t, &ownHook)
	bystander := makeKey(t, org, map[string]any{"name": "other", "role": "buyer"})

	org.do("DELETE", "/api/v1/api-keys/"+root.ID.String(), nil).want(t, http.StatusOK)
	for _, k := range []scopedKey{root, kid, grandkid} {
		testsvc.Eventually(t, 5*time.Second, "a key made by the revoked key refused", func() bool {
			return s.withKey(k.Key).do("GET", "/api/v1/events", nil).status == http.StatusUnauthorized
		})
	}
	s.withKey(bystander.Key).do("GET", "/api/v1/events", nil).want(t, http.StatusOK)
	org.do("GET", "/api/v1/webhooks/"+kidHook.ID.String()+"/deliveries", nil).wantErr(t, http.StatusNotFound, "not_found")
	org.do("GET", "/api/v1/webhooks/"+ownHook.ID.String()+"/deliveries", nil).want(t, http.StatusOK)

	// The keys page shows each key's scopes, expiry and maker.
	page := string(org.do("GET", "/admin/api-keys", nil).want(t, http.StatusOK).body)
	for _, want := range []string{"read, admin", "expires " + until.Format("2006-01-02 15:04"), "made by a key"} {
		if !strings.Contains(page, want) {
			t.Errorf("the keys page lacks %q", want)
		}
	}
}
