package live

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gorilla/websocket"
)

// closeGrace bounds the close handshake: how long the hub tries to send a
// close frame, then waits for the browser's reply, before it drops the TCP
// connection. A dropped slow client usually cannot take the close frame at
// all (its writer holds the connection, blocked), so this is also how long
// such a client lingers.
const closeGrace = time.Second

// closeError is the cause of a client's end when the server ends it; the
// code and text go into the close frame.
type closeError struct {
	code int
	text string
}

func (e *closeError) Error() string { return fmt.Sprintf("live: closed %d %s", e.code, e.text) }

// client is one socket. Its context ends when the client does, for any
// reason; the cause says why (a *closeError when the server ended it).
type client struct {
	v        Viewer
	topic    *topic // set by join under Hub.mu, before any other use
	conn     *websocket.Conn
	send     chan queued   // never closed: the writer exits on ctx instead
	recheck  chan struct{} // asks the writer to check the session now
	readDone chan struct{}
	ctx      context.Context
	cancel   context.CancelCauseFunc
}

func (h *Hub) newClient(v Viewer) *client {
	ctx, cancel := context.WithCancelCause(h.ctx)
	return &client{v: v, send: make(chan queued, h.opt.SendQueue), recheck: make(chan struct{}, 1),
		readDone: make(chan struct{}), ctx: ctx, cancel: cancel}
}

// offer queues f without waiting and reports false if the queue is full.
// A client already ending takes (and ignores) anything. at is the commit
// time of the oldest change in f, for the propagation metric (zero: not
// measured).
func (c *client) offer(f frame, at time.Time) bool {
	if c.ctx.Err() != nil {
		return true
	}
	select {
	case c.send <- queued{f, at}:
		return true
	default:
		return false
	}
}

// shut closes the socket once the client's context has ended: with a close
// frame and handshake when the server ended it, abruptly otherwise (the
// browser left, or reading or writing failed).
func (c *client) shut() {
	var ce *closeError
	if errors.As(context.Cause(c.ctx), &ce) {
		msg := websocket.FormatCloseMessage(ce.code, ce.text)
		if c.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(closeGrace)) == nil {
			// The reader returns when the browser's close frame arrives.
			t := time.NewTimer(closeGrace)
			select {
			case <-c.readDone:
			case <-t.C:
			}
			t.Stop()
		}
	}
	_ = c.conn.Close()
}

// read runs the client's reader: it must read for control frames (pongs,
// close) to be processed. It ends the client when reading fails, which
// also happens once shut closed the connection.
func (h *Hub) read(c *client) {
	defer close(c.readDone)
	c.conn.SetReadLimit(h.opt.MaxMessage)
	alive := func() error { return c.conn.SetReadDeadline(time.Now().Add(h.opt.PongTimeout)) }
	_ = alive()
	c.conn.SetPongHandler(func(string) error { return alive() })
	for {
		typ, msg, err := c.conn.ReadMessage()
		if err != nil {
			if websocket.IsUnexpectedCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) && c.ctx.Err() == nil {
				h.log.Debug("live: read", "event", c.v.Event, "err", err)
			}
			c.cancel(fmt.Errorf("live: read: %w", err))
			return
		}
		_ = alive()
		if typ == websocket.TextMessage && h.opt.OnMessage != nil {
			h.opt.OnMessage(c.v, msg)
		}
	}
}

// write runs the client's writer, the only goroutine writing data frames:
// it sends queued frames and pings until the client's context ends or a
// write fails, then leaves the topic.
func (h *Hub) write(c *client) {
	defer h.leave(c)
	ping := time.NewTicker(h.opt.PingPeriod)
	defer ping.Stop()
	// The session's deadline; a stopped timer when there is none.
	deadline := time.NewTimer(time.Hour)
	deadline.Stop()
	if !c.v.SessionDeadline.IsZero() {
		deadline.Reset(time.Until(c.v.SessionDeadline))
	}
	defer deadline.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-deadline.C:
			if !h.checkSession(c, deadline) {
				return
			}
		case <-c.recheck:
			if !deadline.Stop() {
				// Fired or never set: drain a fire not yet received.
				select {
				case <-deadline.C:
				default:
				}
			}
			if !h.checkSession(c, deadline) {
				return
			}
		case q := <-c.send:
			if err := h.writeFrame(c.conn, q.f); err != nil {
				c.cancel(fmt.Errorf("live: write: %w", err))
				return
			}
			h.sent(c, q)
		case <-ping.C:
			if err := c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(h.opt.WriteTimeout)); err != nil {
				c.cancel(fmt.Errorf("live: ping: %w", err))
				return
			}
		}
	}
}

// sessionRetry is how soon a session check that failed (the store did not
// answer) is tried again; the socket stays open meanwhile.
const sessionRetry = 5 * time.Second

// checkSession asks the store whether c's session still exists and sets
// deadline to its expiry; if it has ended, it ends c with
// CodeSessionEnded and reports false. It runs on c's writer, which is the
// only user of deadline.
func (h *Hub) checkSession(c *client, deadline *time.Timer) bool {
	ended := func() bool {
		c.cancel(&closeError{CodeSessionEnded, "session expired"})
		return false
	}
	if h.opt.SessionExpiry == nil || c.v.SessionToken == "" {
		if !c.v.SessionDeadline.IsZero() && !time.Now().Before(c.v.SessionDeadline) {
			return ended()
		}
		return true
	}
	ctx, cancel := context.WithTimeout(c.ctx, 2*time.Second)
	defer cancel()
	expiry, ok, err := h.opt.SessionExpiry(ctx, c.v.SessionToken)
	switch {
	case err != nil:
		if c.ctx.Err() == nil {
			h.log.Warn("live: check session", "err", err)
			deadline.Reset(sessionRetry)
		}
		return true
	case !ok || !time.Now().Before(expiry):
		return ended()
	}
	deadline.Reset(time.Until(expiry))
	return true
}

// writeFrame writes f as one text message within WriteTimeout.
func (h *Hub) writeFrame(conn *websocket.Conn, f frame) error {
	if err := conn.SetWriteDeadline(time.Now().Add(h.opt.WriteTimeout)); err != nil {
		return err
	}
	if len(f) == 1 {
		return conn.WriteMessage(websocket.TextMessage, f[0])
	}
	w, err := conn.NextWriter(websocket.TextMessage)
	if err != nil {
		return err
	}
	for _, p := range f {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return w.Close()
}
