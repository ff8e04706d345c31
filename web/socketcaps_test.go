package web

import (
	"errors"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestSocketCapsPerAccountAndNetwork: sockets are capped per account
// across its sessions and per client network (/24), not only per
// session: one account signed in twice cannot pass its cap, many accounts
// on one network cannot pass the network's; each refusal is a close 1013
// naming the cap, a socket elsewhere is not affected, and a socket that
// leaves frees its account's place.
func TestSocketCapsPerAccountAndNetwork(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) {
		trustLoopback(c)
		c.MaxSocketsPerSession = 2
		c.MaxSocketsPerUser = 3
		c.MaxSocketsPerNetwork = 4
	})
	tn := testenv.NewTenant(t, s.app, 4)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 4)
	ip := randomNet24() + "7"
	dial := func(c *client, from string) *websocket.Conn {
		t.Helper()
		conn, _, err := s.dialAs(t, c, ev.ID, "X-Forwarded-For", from)
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}
	open := func(conn *websocket.Conn) {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, _, err := conn.ReadMessage(); errors.As(err, new(*websocket.CloseError)) {
			t.Fatalf("socket within the caps was closed: %v", err)
		}
		_ = conn.SetReadDeadline(time.Time{})
	}

	// One account, two sessions: 2 + 1 sockets, then the account's cap.
	tab1, tab2 := s.as(tn.Org, tn.Buyers[0]), s.as(tn.Org, tn.Buyers[0])
	first := dial(tab1, ip)
	open(first)
	open(dial(tab1, ip))
	open(dial(tab2, ip))
	wantRefused(t, dial(tab2, ip), "for this account")

	// Another account of the network: one socket, then the network's cap
	// (4) for a third account there, while one elsewhere connects.
	open(dial(s.as(tn.Org, tn.Buyers[1]), ip))
	wantRefused(t, dial(s.as(tn.Org, tn.Buyers[2]), ip), "from this network")
	open(dial(s.as(tn.Org, tn.Buyers[3]), randomNet24()+"7"))

	// A socket that leaves frees its place for the account.
	_ = first.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	testsvc.Eventually(t, 5*time.Second, "the closed socket uncounted", func() bool { return s.srv.hub.Stats().Clients <= 4 })
	open(dial(tab2, ip))
}
