package web

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/web/api"
	"seatd/web/httpx"
	"seatd/web/live"
)

// at is the same user agent (cookie jar) talking to another server: the
// jar keys cookies by host, not port, so the session goes along.
func (c *client) at(s *testServer) *client {
	return &client{t: c.t, base: s.ts.URL, hc: c.hc}
}

// waitClosed reads from conn until the server closes it and returns the
// close frame's code, failing if that takes longer than within.
func waitClosed(t *testing.T, conn *websocket.Conn, within time.Duration) (code int, after time.Duration) {
	t.Helper()
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(within))
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("socket not closed by the server within %v: %v", within, err)
			}
			return ce.Code, time.Since(start)
		}
	}
}

// TestSessionEndClosesSocketsEverywhere: two processes (apps sharing
// Postgres and Redis). A session's sockets close with 4401 on both within
// 2 s when it is logged out on one of them, when the account is disabled
// or its role changed (the CLI's path), and at the session's idle
// deadline; the ended session is refused on its next request.
func TestSessionEndClosesSocketsEverywhere(t *testing.T) {
	s1 := newTestServer(t, nil)
	s2 := serveApp(t, testenv.App(t, func(c *config.Config) {
		c.PGMaxConns = 8
		generousLimits(c)
	}), options{})
	tn := testenv.NewTenant(t, s1.app, 3)
	ev := testenv.NewEvent(t, s1.app, tn.Org.ID, 1, 2, 4)
	ctx := context.Background()

	// open signs c in on process 1 and opens a socket of its session on
	// each process; bystander is another user's socket on process 2.
	open := func(t *testing.T, c *client) (*websocket.Conn, *websocket.Conn) {
		t.Helper()
		a, _, err := s1.socket(t, c, ev.ID, s1.ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := s2.socket(t, c, ev.ID, s2.ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
	bystander := s2.as(tn.Org, tn.Buyers[2])
	bconn, _, err := s2.socket(t, bystander, ev.ID, s2.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	bothClosed := func(t *testing.T, a, b *websocket.Conn) {
		t.Helper()
		for i, conn := range []*websocket.Conn{b, a} {
			code, after := waitClosed(t, conn, 2*time.Second)
			if code != live.CodeSessionEnded {
				t.Fatalf("process %d socket closed with %d, want %d", 2-i, code, live.CodeSessionEnded)
			}
			t.Logf("process %d socket closed with %d after %v", 2-i, code, after.Round(time.Millisecond))
		}
	}

	t.Run("logout on process 1", func(t *testing.T) {
		c := s1.as(tn.Org, tn.Buyers[0])
		a, b := open(t, c)
		c.do("POST", "/logout", nil).want(t, http.StatusNoContent)
		bothClosed(t, a, b)
	})

	t.Run("account disabled", func(t *testing.T) {
		u := tn.Buyers[1]
		c := s1.as(tn.Org, u)
		a, b := open(t, c)
		on2 := c.at(s2)
		on2.do("GET", "/api/v1/me", nil).want(t, http.StatusOK) // cached on process 2 now
		chg, err := s1.app.Accounts.Disable(ctx, tn.Org.ID, u.Email)
		if err != nil {
			t.Fatal(err)
		}
		if chg.Sessions != 1 {
			t.Fatalf("disable ended %d sessions, want 1", chg.Sessions)
		}
		bothClosed(t, a, b)
		// The next request of the session is signed out, on either process.
		on2.do("GET", "/api/v1/me", nil).wantErr(t, http.StatusUnauthorized, "unauthorized")
		if r := c.do("GET", "/events", nil); r.status != http.StatusSeeOther || r.header.Get("Location") != "/login" {
			t.Fatalf("page of a disabled session: %d %s, want a redirect to /login", r.status, r.header.Get("Location"))
		}
		// And the account cannot sign in again.
		s2.client().do("POST", "/login", map[string]string{"org": tn.Org.Slug, "email": u.Email, "password": testenv.Password}).
			wantErr(t, http.StatusUnauthorized, "unauthorized")
	})

	t.Run("role changed", func(t *testing.T) {
		u := tn.BoxOffice
		c := s1.as(tn.Org, u)
		a, b := open(t, c)
		if _, err := s2.app.Accounts.ChangeRole(ctx, tn.Org.ID, u.Email, "buyer"); err != nil {
			t.Fatal(err)
		}
		bothClosed(t, a, b)
		// The session is ended, not carried on with either role.
		c.do("GET", "/api/v1/me", nil).wantErr(t, http.StatusUnauthorized, "unauthorized")
		var me api.AccountJSON
		s1.as(tn.Org, u).do("GET", "/api/v1/me", nil).want(t, http.StatusOK).json(t, &me)
		if me.User.Role != "buyer" {
			t.Fatalf("signed in again as %q, want buyer", me.User.Role)
		}
	})

	// Nobody else's socket was touched.
	if st := s2.srv.hub.Stats(); st.Clients != 1 {
		t.Fatalf("process 2 has %d sockets, want the bystander's only", st.Clients)
	}
	bystander.do("GET", "/api/v1/me", nil).want(t, http.StatusOK)
	_ = bconn

	t.Run("data changed elsewhere", func(t *testing.T) {
		c := s1.as(tn.Org, tn.Organizer)
		a, b := open(t, c)
		on2 := c.at(s2)
		on2.do("GET", "/api/v1/me", nil).want(t, http.StatusOK) // cached on process 2 now
		// A flash message set on process 1 changes the session's data;
		// every process drops its cached copy of it
		// (TestSessionDataChangedElsewhere in web/session).
		key, _ := keyOf(t, c, "buyer")
		c.do("POST", "/admin/api-keys/"+key.String()+"/revoke", raw{contentType: httpx.MediaForm}).want(t, http.StatusSeeOther)
		// The session goes on: its sockets stay open on both processes.
		for i, conn := range []*websocket.Conn{b, a} {
			_ = conn.SetReadDeadline(time.Now().Add(time.Second))
			for {
				_, _, err := conn.ReadMessage()
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					t.Fatalf("process %d socket closed with %d after a change of the session's data", 2-i, ce.Code)
				}
				if err != nil {
					break // the deadline: still open
				}
			}
			_ = conn.Close()
		}
		on2.do("GET", "/api/v1/me", nil).want(t, http.StatusOK)
	})

	t.Run("idle deadline", func(t *testing.T) {
		const idle = 2 * time.Second
		s3 := newTestServer(t, func(c *config.Config) { c.SessionIdleTimeout = idle })
		c := s3.as(tn.Org, tn.Buyers[2])
		start := time.Now()
		conn, _, err := s3.socket(t, c, ev.ID, s3.ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		code, _ := waitClosed(t, conn, idle+2*time.Second)
		took := time.Since(start)
		if code != live.CodeSessionEnded {
			t.Fatalf("closed with %d, want %d", code, live.CodeSessionEnded)
		}
		// Not before the session could have expired: the store's expiry
		// lags the idle deadline by at most its touch period (a tenth of
		// it, spread by up to a half: 0.15 of it).
		if took < idle*8/10 {
			t.Fatalf("closed after %v, before the session's idle deadline (%v)", took, idle)
		}
		t.Logf("idle socket closed with %d after %v (idle timeout %v)", code, took.Round(time.Millisecond), idle)
		c.do("GET", "/api/v1/me", nil).wantErr(t, http.StatusUnauthorized, "unauthorized")
	})
}
