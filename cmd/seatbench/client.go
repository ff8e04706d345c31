package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
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

// call sends one JSON request with a session's cookie and returns the
// status and body.
func (s *server) call(ctx context.Context, sess *session, method, path string, body []byte) (int, []byte, error) {
	return s.send(ctx, sess, method, path, "application/json", body)
}

// send is call with a body of another media type.
func (s *server) send(ctx context.Context, sess *session, method, path, contentType string, body []byte) (int, []byte, error) {
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
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// login signs in through POST /login and keeps the session cookie.
func (s *server) login(ctx context.Context, org, email, password string) (*session, error) {
	body, _ := json.Marshal(map[string]string{"org": org, "email": email, "password": password})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/login", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
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
