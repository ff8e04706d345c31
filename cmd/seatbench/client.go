package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// newHTTPClient keeps one connection per concurrent buyer alive, as
// browsers would: the load must measure holds, not TCP handshakes.
func newHTTPClient() *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 8192,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// session is a signed-in account: its cookie and who it is.
type session struct {
	email  string
	userID string
	cookie string // "name=value", sent as is
}

// call sends one JSON request with a session's cookie and any further
// header lines ("Name: value") and returns the status and body.
func (s *server) call(ctx context.Context, sess *session, method, path string, body []byte, header ...string) (int, []byte, error) {
	return s.send(ctx, sess, method, path, "application/json", body, header...)
}

// opsGet asks the server's ops listener (metrics, probes with their
// detail, profiles).
func (s *server) opsGet(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.ops+path, nil)
	if err != nil {
		return 0, nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = res.Body.Close() }()
	body, err := io.ReadAll(res.Body)
	return res.StatusCode, body, err
}

// send is call with a body of another media type.
func (s *server) send(ctx context.Context, sess *session, method, path, contentType string, body []byte, header ...string) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if sess != nil {
		req.Header.Set("Cookie", sess.cookie)
	}
	for _, h := range header {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Set(name, value)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// post sends a JSON POST and returns only the status (0 on a transport
// error); the body is drained so the connection is reused.
func (s *server) post(ctx context.Context, sess *session, path string, body []byte) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+path, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cookie", sess.cookie)
	resp, err := s.http.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// login signs in through POST /login and keeps the session cookie. A
// sign-in refused for now (429, or 503 when every password-hashing slot
// and its line are taken) is sent again after its Retry-After, as a
// polite client does, for up to a minute.
func (s *server) login(ctx context.Context, org, email, password string) (*session, error) {
	body, _ := json.Marshal(map[string]string{"org": org, "email": email, "password": password})
	giveUp := time.Now().Add(time.Minute)
	var resp *http.Response
	var raw []byte
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/login", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		if resp, err = s.http.Do(req); err != nil {
			return nil, err
		}
		raw, _ = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		busy := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable
		if !busy || err != nil || time.Now().Add(time.Duration(retry)*time.Second).After(giveUp) {
			break
		}
		sleepUntil(ctx, time.Now().Add(time.Duration(retry)*time.Second))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("login %s: %d %s", email, resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	var acct struct {
		User struct {
			ID string `json:"id"`
		} `json:"user"`
	}
	if err := json.Unmarshal(raw, &acct); err != nil {
		return nil, fmt.Errorf("login %s: %w", email, err)
	}
	for _, c := range resp.Cookies() {
		if strings.Contains(c.Name, "seatd_session") && c.Value != "" {
			return &session{email: email, userID: acct.User.ID, cookie: c.Name + "=" + c.Value}, nil
		}
	}
	return nil, fmt.Errorf("login %s: no session cookie in the answer", email)
}

// holdAnswer is the part of a hold answer the bench reads.
type holdAnswer struct {
	ID        string    `json:"id"`
	SeatID    string    `json:"seat_id"`
	HeldUntil time.Time `json:"held_until"`
	Error     string    `json:"error"`
}

func holdBody(seat string) []byte { return []byte(`{"seat_id":"` + seat + `"}`) }

// hold asks for one seat.
func (s *server) hold(ctx context.Context, sess *session, event, seat string) (int, holdAnswer, error) {
	code, raw, err := s.call(ctx, sess, http.MethodPost, "/api/v1/events/"+event+"/holds", holdBody(seat))
	var a holdAnswer
	if err == nil && len(raw) > 0 {
		_ = json.Unmarshal(raw, &a)
	}
	return code, a, err
}

// rawConn is one buyer's keep-alive connection for the bursts, written
// and read directly. net/http's client hands each request between three
// goroutines (caller, writer, reader) and builds a header map each way:
// during a best-available burst of 500 requests the load generator used
// 31 ms of CPU with it and 17 ms with this (means over 80 bursts), CPU
// taken from the server on the same two cores that it would have had on
// a machine of its own (wrk is written in C for the same reason).
// Requests are HTTP/1.1 with a body length; answers are read with
// net/http's own response parser.
type rawConn struct {
	host string
	c    net.Conn
	r    *bufio.Reader
	buf  []byte
}

// dialRaw opens a connection to s.
func (s *server) dialRaw(ctx context.Context) (*rawConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return nil, err
	}
	return &rawConn{host: s.addr, c: c, r: bufio.NewReader(c)}, nil
}

// call sends one JSON request with sess's cookie and any further header
// lines ("Name: value") and returns the status and body; the connection
// stays open for the next.
func (rc *rawConn) call(sess *session, method, path string, body []byte, header ...string) (int, []byte, error) {
	b := rc.buf[:0]
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, rc.host...)
	b = append(b, "\r\nCookie: "...)
	b = append(b, sess.cookie...)
	for _, h := range header {
		b = append(b, "\r\n"...)
		b = append(b, h...)
	}
	if body != nil {
		b = append(b, "\r\nContent-Type: application/json\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
	}
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	rc.buf = b
	if err := rc.c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return 0, nil, err
	}
	if _, err := rc.c.Write(b); err != nil {
		return 0, nil, err
	}
	resp, err := http.ReadResponse(rc.r, nil)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// Close closes the connection.
func (rc *rawConn) Close() error { return rc.c.Close() }
