package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/web/api"
)

// inviteOnly sets org's sign-up policy to invite_only as its organizer.
func inviteOnly(t *testing.T, org *client) {
	t.Helper()
	org.do("PATCH", "/api/v1/org", map[string]string{"signup_policy": "invite_only"}).want(t, http.StatusOK)
}

// invite invites email as org's organizer and waits for the mail; it
// returns the invitation and its link's token.
func invite(t *testing.T, org *client, mp *testsvc.Mailpit, email string) (api.InvitationJSON, string) {
	t.Helper()
	var inv api.InvitationJSON
	org.do("POST", "/api/v1/invitations", map[string]string{"email": email}).want(t, http.StatusCreated).json(t, &inv)
	if inv.Status != "pending" || inv.Email != strings.ToLower(email) {
		t.Fatalf("invitation %+v", inv)
	}
	_, token := linkToken(t, mp, strings.ToLower(email), "You are invited", "/invitations/accept")
	return inv, token
}

// invitationStatus is the status GET /api/v1/invitations lists for id.
func invitationStatus(t *testing.T, org *client, id uuid.UUID) string {
	t.Helper()
	var list []api.InvitationJSON
	org.do("GET", "/api/v1/invitations", nil).want(t, http.StatusOK).json(t, &list)
	for _, i := range list {
		if i.ID == id {
			return i.Status
		}
	}
	t.Fatalf("invitation %s not listed", id)
	return ""
}

// TestInvitationSignsUp: under invite_only a public sign-up is refused;
// an organizer's invitation mails a link (HTML and text, through the
// outbox and Mailpit) whose page spends nothing; posting its token with
// a password makes a verified buyer who signs in and holds. The link
// works once, admits to its own organization only, and is stored by its
// hash.
func TestInvitationSignsUp(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, ownQueues(t))
	testenv.Background(t, s.app)
	mp := testsvc.MailpitFromEnv(t)
	a, b := testenv.NewTenant(t, s.app, 0), testenv.NewTenant(t, s.app, 0)
	orgA, orgB := s.as(a.Org, a.Organizer), s.as(b.Org, b.Organizer)
	inviteOnly(t, orgA)
	inviteOnly(t, orgB)
	ev := testenv.NewEvent(t, s.app, a.Org.ID, 1, 1, 5)
	seats := testenv.SeatIDs(t, s.app, a.Org.ID, ev.ID)
	email := "Invited-" + uuid.NewString()[:8] + "@x.example"
	lower := strings.ToLower(email)

	signup := func(org string) response {
		return s.client().do("POST", "/o/"+org+"/signup", map[string]string{"email": email, "password": testenv.Password})
	}
	signup(a.Org.Slug).wantErr(t, http.StatusForbidden, "signup_closed")

	inv, token := invite(t, orgA, mp, email)
	msg, _ := linkToken(t, mp, lower, "You are invited", "")
	if msg.HTML == "" || !strings.Contains(msg.Text, a.Org.Name) {
		t.Fatalf("invitation mail: text %q, html %d bytes", msg.Text, len(msg.HTML))
	}
	page := s.client().do("GET", "/invitations/accept?token="+url.QueryEscape(token), nil).want(t, http.StatusOK)
	if !strings.Contains(string(page.body), `action="/invitations/accept"`) || !strings.Contains(string(page.body), lower) {
		t.Fatalf("invitation page: %s", page.body)
	}
	s.client().do("POST", "/invitations/accept", map[string]string{"token": token, "password": "short"}).
		wantErr(t, http.StatusUnprocessableEntity, "invalid")
	if st := invitationStatus(t, orgA, inv.ID); st != "pending" {
		t.Fatalf("after a refused password: %s, want pending", st)
	}
	var st struct{ Status string }
	s.client().do("POST", "/invitations/accept", map[string]string{"token": token, "password": testenv.Password}).
		want(t, http.StatusOK).json(t, &st)
	if st.Status != "accepted" {
		t.Fatalf("accept: %+v", st)
	}
	s.client().do("POST", "/invitations/accept", map[string]string{"token": token, "password": testenv.Password}).
		wantErr(t, http.StatusNotFound, "not_found")
	s.client().do("GET", "/invitations/accept?token="+url.QueryEscape(token), nil).want(t, http.StatusNotFound)

	c := s.client()
	var acc api.AccountJSON
	c.login(a.Org.Slug, email, testenv.Password).json(t, &acc)
	if acc.User.EmailVerified == nil || !*acc.User.EmailVerified || acc.User.Role != "buyer" {
		t.Fatalf("invited account: %+v", acc.User)
	}
	c.do("POST", "/api/v1/events/"+ev.ID.String()+"/holds", map[string]string{"seat_id": seats[0].String()}).want(t, http.StatusCreated)
	if st := invitationStatus(t, orgA, inv.ID); st != "accepted" {
		t.Fatalf("listed as %s, want accepted", st)
	}

	// The link admitted to A only: B has no such account, still refuses a
	// public sign-up, and cannot see or revoke A's invitation.
	s.client().do("POST", "/login", map[string]string{"org": b.Org.Slug, "email": email, "password": testenv.Password}).
		wantErr(t, http.StatusUnauthorized, "unauthorized")
	signup(b.Org.Slug).wantErr(t, http.StatusForbidden, "signup_closed")
	orgB.do("DELETE", "/api/v1/invitations/"+inv.ID.String(), nil).wantErr(t, http.StatusNotFound, "not_found")
	var listB []api.InvitationJSON
	orgB.do("GET", "/api/v1/invitations", nil).want(t, http.StatusOK).json(t, &listB)
	if len(listB) != 0 {
		t.Fatalf("B lists %+v", listB)
	}
	orgA.do("DELETE", "/api/v1/invitations/"+inv.ID.String(), nil).wantErr(t, http.StatusConflict, "conflict")

	var hashed int
	if err := s.app.Pool.QueryRow(t.Context(), `SELECT count(*) FROM invitations
		WHERE org_id = $1 AND token_hash = sha256(convert_to($2, 'UTF8'))`, a.Org.ID, token).Scan(&hashed); err != nil || hashed != 1 {
		t.Fatalf("invitations stored by their token's SHA-256: %d rows match, %v", hashed, err)
	}
	t.Logf("invite_only: sign-up 403; invitation mailed; accepted once (then 404); verified buyer holds; B not admitted")
}

// TestInvitationRefusals: a revoked link and an expired one admit
// nobody, and the list says which they are; a new invitation of the same
// address replaces the pending one.
func TestInvitationRefusals(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, ownQueues(t))
	testenv.Background(t, s.app)
	mp := testsvc.MailpitFromEnv(t)
	tn := testenv.NewTenant(t, s.app, 0)
	org := s.as(tn.Org, tn.Organizer)
	inviteOnly(t, org)
	accept := func(token string) response {
		return s.client().do("POST", "/invitations/accept", map[string]string{"token": token, "password": testenv.Password})
	}

	revoked := "revoked-" + uuid.NewString()[:8] + "@x.example"
	inv, token := invite(t, org, mp, revoked)
	org.do("DELETE", "/api/v1/invitations/"+inv.ID.String(), nil).want(t, http.StatusNoContent)
	accept(token).wantErr(t, http.StatusNotFound, "not_found")
	if st := invitationStatus(t, org, inv.ID); st != "revoked" {
		t.Fatalf("revoked invitation listed as %s", st)
	}

	expired := "expired-" + uuid.NewString()[:8] + "@x.example"
	inv, token = invite(t, org, mp, expired)
	if _, err := s.app.Pool.Exec(t.Context(), `UPDATE invitations SET expires_at = now() - interval '1 second'
		WHERE org_id = $1 AND id = $2`, tn.Org.ID, inv.ID); err != nil {
		t.Fatal(err)
	}
	accept(token).wantErr(t, http.StatusNotFound, "not_found")
	if st := invitationStatus(t, org, inv.ID); st != "expired" {
		t.Fatalf("expired invitation listed as %s", st)
	}
	for _, e := range []string{revoked, expired} {
		s.client().do("POST", "/login", map[string]string{"org": tn.Org.Slug, "email": e, "password": testenv.Password}).
			wantErr(t, http.StatusUnauthorized, "unauthorized")
	}

	// Inviting an address again replaces its pending invitation: the
	// first link works no more, the second does.
	again := "again-" + uuid.NewString()[:8] + "@x.example"
	first, firstToken := invite(t, org, mp, again)
	var second api.InvitationJSON
	org.do("POST", "/api/v1/invitations", map[string]string{"email": again}).want(t, http.StatusCreated).json(t, &second)
	if st := invitationStatus(t, org, first.ID); st != "revoked" {
		t.Fatalf("the replaced invitation is %s", st)
	}
	accept(firstToken).wantErr(t, http.StatusNotFound, "not_found")
}

// TestInvitationRevealsNoAccounts: inviting the address of an account
// answers as for a new address, and accepting it confirms that account
// and leaves its password as it was (the answer is the same again).
func TestInvitationRevealsNoAccounts(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, ownQueues(t))
	testenv.Background(t, s.app)
	mp := testsvc.MailpitFromEnv(t)
	tn := testenv.NewTenant(t, s.app, 1)
	org := s.as(tn.Org, tn.Organizer)
	inviteOnly(t, org)
	known := tn.Buyers[0].Email
	fresh := "fresh-" + uuid.NewString()[:8] + "@x.example"

	// The answers differ only in what names the invitation.
	shape := func(r response) string {
		var m map[string]any
		r.json(t, &m)
		for _, k := range []string{"id", "email", "created_at", "expires_at"} {
			m[k] = "…"
		}
		return fmt.Sprint(m)
	}
	ka := shape(org.do("POST", "/api/v1/invitations", map[string]string{"email": known}).want(t, http.StatusCreated))
	kb := shape(org.do("POST", "/api/v1/invitations", map[string]string{"email": fresh}).want(t, http.StatusCreated))
	if ka != kb {
		t.Fatalf("invitation answers differ: %s / %s", ka, kb)
	}
	_, tokenKnown := linkToken(t, mp, known, "You are invited", "/invitations/accept")
	_, tokenFresh := linkToken(t, mp, fresh, "You are invited", "/invitations/accept")
	const other = "another-password-9"
	a := s.client().do("POST", "/invitations/accept", map[string]string{"token": tokenKnown, "password": other}).want(t, http.StatusOK)
	b := s.client().do("POST", "/invitations/accept", map[string]string{"token": tokenFresh, "password": other}).want(t, http.StatusOK)
	if string(a.body) != string(b.body) {
		t.Fatalf("accept answers differ:\n known %s\n fresh %s", a.body, b.body)
	}
	s.client().login(tn.Org.Slug, known, testenv.Password)
	s.client().do("POST", "/login", map[string]string{"org": tn.Org.Slug, "email": known, "password": other}).
		wantErr(t, http.StatusUnauthorized, "unauthorized")
	s.client().login(tn.Org.Slug, fresh, other)
}

// TestInvitationQuotaAndPage: past the quota of pending invitations an
// invitation is 409 with fields.quota, and revoking one makes room; the
// organizer's page invites and revokes; buyers may do neither.
func TestInvitationQuotaAndPage(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, func(c *config.Config) { c.QuotaInvitations = 2 })
	testenv.Background(t, s.app)
	tn := testenv.NewTenant(t, s.app, 1)
	org := s.as(tn.Org, tn.Organizer)
	addr := func() string { return "q-" + uuid.NewString()[:8] + "@x.example" }
	var first api.InvitationJSON
	org.do("POST", "/api/v1/invitations", map[string]string{"email": addr()}).want(t, http.StatusCreated).json(t, &first)
	org.do("POST", "/api/v1/invitations", map[string]string{"email": addr()}).want(t, http.StatusCreated)
	e := org.do("POST", "/api/v1/invitations", map[string]string{"email": addr()}).wantErr(t, http.StatusConflict, "conflict")
	if e.Fields["quota"] == "" {
		t.Fatalf("quota refusal without fields.quota: %+v", e)
	}
	org.do("DELETE", "/api/v1/invitations/"+first.ID.String(), nil).want(t, http.StatusNoContent)

	// The page: the form invites (303 back with a flash), the list shows
	// it with a revoke button, which revokes.
	form := func(v url.Values) raw {
		return raw{contentType: "application/x-www-form-urlencoded", body: []byte(v.Encode())}
	}
	viaPage := addr()
	org.do("POST", "/admin/invitations", form(url.Values{"email": {viaPage}})).want(t, http.StatusSeeOther)
	p := org.do("GET", "/admin/invitations", nil).want(t, http.StatusOK)
	if !strings.Contains(string(p.body), viaPage) || !strings.Contains(string(p.body), `action="/admin/invitations"`) {
		t.Fatalf("invitations page: %s", p.body)
	}
	var list []api.InvitationJSON
	org.do("GET", "/api/v1/invitations", nil).want(t, http.StatusOK).json(t, &list)
	var id string
	for _, i := range list {
		if i.Email == viaPage {
			id = i.ID.String()
		}
	}
	org.do("POST", "/admin/invitations/"+id+"/revoke", form(url.Values{})).want(t, http.StatusSeeOther)
	if st := invitationStatus(t, org, uuid.MustParse(id)); st != "revoked" {
		t.Fatalf("revoked from the page: %s", st)
	}

	buyer := s.as(tn.Org, tn.Buyers[0])
	buyer.do("POST", "/api/v1/invitations", map[string]string{"email": addr()}).wantErr(t, http.StatusForbidden, "forbidden")
	buyer.do("GET", "/api/v1/invitations", nil).wantErr(t, http.StatusForbidden, "forbidden")
}
