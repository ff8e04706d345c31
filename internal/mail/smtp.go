package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	gomail "github.com/wneessen/go-mail"
	"github.com/wneessen/go-mail/smtp"
)

// TLS is how a connection to the SMTP server is protected.
type TLS int

// The TLS modes, chosen by the URL's scheme.
const (
	// STARTTLSIfOffered (smtp://): STARTTLS when the server offers it,
	// plain SMTP otherwise — a local relay or Mailpit. Passwords are then
	// sent only by challenge-response mechanisms (CRAM-MD5, SCRAM), never
	// in the clear.
	STARTTLSIfOffered TLS = iota
	// STARTTLS (smtp+starttls://): STARTTLS required; a server that does
	// not offer it is an error. Usual for a provider's port 587.
	STARTTLS
	// Implicit (smtps://): TLS from the first byte, usually port 465.
	Implicit
)

// Server is an SMTP server to send through, parsed from SEATD_SMTP_URL.
type Server struct {
	Host     string
	Port     int
	TLS      TLS
	Username string
	Password string
	// Auth is the SASL mechanism the URL's ?auth= names ("PLAIN",
	// "LOGIN", "CRAM-MD5", "SCRAM-SHA-256", ...); empty picks the
	// strongest the server offers that the connection allows.
	Auth string
}

var schemes = map[string]struct {
	tls  TLS
	port int
}{
	"smtp":          {STARTTLSIfOffered, 25},
	"smtp+starttls": {STARTTLS, 587},
	"smtps":         {Implicit, 465},
}

var mechanisms = map[string]gomail.SMTPAuthType{
	"plain": gomail.SMTPAuthPlain, "login": gomail.SMTPAuthLogin, "cram-md5": gomail.SMTPAuthCramMD5,
	"scram-sha-1": gomail.SMTPAuthSCRAMSHA1, "scram-sha-256": gomail.SMTPAuthSCRAMSHA256,
	"scram-sha-1-plus": gomail.SMTPAuthSCRAMSHA1PLUS, "scram-sha-256-plus": gomail.SMTPAuthSCRAMSHA256PLUS,
	"xoauth2": gomail.SMTPAuthXOAUTH2,
}

// ParseURL reads SEATD_SMTP_URL: scheme://[user:password@]host[:port][?auth=MECHANISM],
// with scheme smtp (STARTTLS if offered, port 25), smtp+starttls
// (STARTTLS required, port 587) or smtps (implicit TLS, port 465). The
// user and password are URL-encoded.
func ParseURL(raw string) (Server, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Server{}, errors.New("SEATD_SMTP_URL: not a URL")
	}
	redacted := u.Redacted()
	sc, ok := schemes[u.Scheme]
	if !ok || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.Fragment != "" {
		return Server{}, fmt.Errorf("SEATD_SMTP_URL: %q must be smtp://, smtp+starttls:// or smtps://[user:password@]host[:port]", redacted)
	}
	s := Server{Host: u.Hostname(), Port: sc.port, TLS: sc.tls}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Server{}, fmt.Errorf("SEATD_SMTP_URL: %q: bad port", redacted)
		}
		s.Port = n
	}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	q := u.Query()
	for k := range q {
		if k != "auth" {
			return Server{}, fmt.Errorf("SEATD_SMTP_URL: %q: unknown option %q (only auth)", redacted, k)
		}
	}
	if a := q.Get("auth"); a != "" {
		if _, ok := mechanisms[strings.ToLower(a)]; !ok {
			return Server{}, fmt.Errorf("SEATD_SMTP_URL: %q: unknown auth mechanism %q", redacted, a)
		}
		if s.Username == "" {
			return Server{}, fmt.Errorf("SEATD_SMTP_URL: %q: auth needs user:password@", redacted)
		}
		s.Auth = strings.ToUpper(a)
	}
	return s, nil
}

// String is the server's URL without its password, for logs.
func (s Server) String() string {
	scheme := "smtp"
	for k, v := range schemes {
		if v.tls == s.TLS {
			scheme = k
		}
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(s.Host, strconv.Itoa(s.Port))}
	if s.Username != "" {
		u.User = url.User(s.Username)
	}
	return u.String()
}

// conn is one SMTP session of a worker's batch.
type conn struct {
	gc   *gomail.Client
	sc   *smtp.Client
	stop func() bool
	mu   sync.Mutex
	raw  net.Conn
}

// dial opens an SMTP session: connect, EHLO, STARTTLS, AUTH. Every
// command after it has timeout to answer. When ctx ends (shutdown) the
// connection is closed under whatever command is running, which then
// fails: shutdown does not wait for a slow server.
func (s Server) dial(ctx context.Context, timeout time.Duration) (*conn, error) {
	c := &conn{}
	tlsConf := &tls.Config{ServerName: s.Host, MinVersion: tls.VersionTLS12}
	opts := []gomail.Option{
		gomail.WithPort(s.Port), gomail.WithTimeout(timeout), gomail.WithTLSConfig(tlsConf),
		// Our own dial, to keep the connection for closing on ctx. For
		// implicit TLS it is a TLS dial (go-mail's WithSSL applies only
		// to its own dialer).
		gomail.WithDialContextFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
			d := &net.Dialer{Timeout: timeout}
			var nc net.Conn
			var err error
			if s.TLS == Implicit {
				nc, err = (&tls.Dialer{NetDialer: d, Config: tlsConf}).DialContext(ctx, network, addr)
			} else {
				nc, err = d.DialContext(ctx, network, addr)
			}
			if err == nil {
				c.mu.Lock()
				c.raw = nc
				c.mu.Unlock()
			}
			return nc, err
		}),
	}
	switch s.TLS {
	case STARTTLSIfOffered:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	case STARTTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case Implicit:
		// The dial did the TLS; no STARTTLS on top.
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	}
	if s.Username != "" {
		opts = append(opts, gomail.WithUsername(s.Username), gomail.WithPassword(s.Password))
		switch {
		case s.Auth != "":
			opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthType(s.Auth)))
		case s.TLS == Implicit:
			// go-mail's discovery cannot see that our own dial made the
			// connection TLS, and would refuse PLAIN and LOGIN, which is
			// what most providers offer: name them, strongest first.
			opts = append(opts, gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthSCRAMSHA256PLUS, gomail.SMTPAuthSCRAMSHA256,
				gomail.SMTPAuthSCRAMSHA1PLUS, gomail.SMTPAuthSCRAMSHA1, gomail.SMTPAuthCramMD5, gomail.SMTPAuthPlain, gomail.SMTPAuthLogin))
		default:
			// The strongest mechanism offered; PLAIN and LOGIN only
			// once the connection is TLS.
			opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover))
		}
	}
	gc, err := gomail.NewClient(s.Host, opts...)
	if err != nil {
		return nil, err
	}
	c.gc = gc
	c.stop = context.AfterFunc(ctx, c.abort)
	c.sc, err = gc.DialToSMTPClientWithContext(ctx)
	if err != nil {
		c.stop()
		c.abort()
		return nil, err
	}
	return c, nil
}

// abort closes the network connection under a running command.
func (c *conn) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.raw != nil {
		_ = c.raw.Close()
	}
}

// send sends one message; it was delivered when it returns nil.
func (c *conn) send(m *gomail.Msg) error {
	return c.gc.SendWithSMTPClient(c.sc, m)
}

// close ends the session politely (QUIT), or just closes the connection
// when that fails.
func (c *conn) close() {
	c.stop()
	if err := c.gc.CloseWithSMTPClient(c.sc); err != nil {
		c.abort()
	}
}
