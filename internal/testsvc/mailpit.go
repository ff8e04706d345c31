package testsvc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Mailpit is a Mailpit server a test sends mail to and reads it back from
// through its REST API: the one make test starts (MailpitFromEnv), or a
// throwaway process of the test's own (StartMailpit).
type Mailpit struct {
	t        testing.TB
	smtpAddr string
	api      string // http://host:port of the web inbox and API
	hc       *http.Client

	// A throwaway process: its binary, ports, database and extra flags.
	bin   string
	dir   string
	extra []string
	cmd   *exec.Cmd
	done  chan struct{}
}

// MailpitFromEnv is the Mailpit of SEATD_SMTP_URL and SEATD_MAILPIT_URL
// (make test and scripts/services.sh start it). Tests share it, so each
// reads only the mail of recipients of its own.
func MailpitFromEnv(t testing.TB) *Mailpit {
	t.Helper()
	smtpURL, api := os.Getenv("SEATD_SMTP_URL"), os.Getenv("SEATD_MAILPIT_URL")
	if smtpURL == "" || api == "" {
		t.Fatal("SEATD_SMTP_URL and SEATD_MAILPIT_URL are not set: run the tests with make test, " +
			`or eval "$(scripts/services.sh up test)" first`)
	}
	u, err := url.Parse(smtpURL)
	if err != nil || u.Host == "" {
		t.Fatalf("SEATD_SMTP_URL %q: not smtp://host:port", smtpURL)
	}
	return &Mailpit{t: t, smtpAddr: u.Host, api: api, hc: &http.Client{Timeout: 10 * time.Second}}
}

// StartMailpit starts a Mailpit of the test's own on free loopback ports,
// with extra flags (e.g. --smtp-allowed-recipients); it is stopped when
// the test ends. Its database lives in a temporary directory and survives
// Stop and Start.
func StartMailpit(t testing.TB, extra ...string) *Mailpit {
	t.Helper()
	m := &Mailpit{t: t, bin: mailpitBinary(t), dir: t.TempDir(), extra: extra, hc: &http.Client{Timeout: 10 * time.Second}}
	m.smtpAddr = "127.0.0.1:" + strconv.Itoa(freePort(t))
	m.api = "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	m.Start()
	t.Cleanup(m.Stop)
	return m
}

// mailpitBinary is .bin/mailpit at the module's root (make mailpit
// installs the pinned version; scripts/services.sh does it when needed).
func mailpitBinary(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	bin := filepath.Join(dir, ".bin", "mailpit")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v (run make mailpit)", bin, err)
	}
	return bin
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// SMTPURL is the smtp:// URL to send to it (SEATD_SMTP_URL).
func (m *Mailpit) SMTPURL() string { return "smtp://" + m.smtpAddr }

// Start (re)starts a throwaway Mailpit on its ports and database and
// waits until both ports answer.
func (m *Mailpit) Start() {
	m.t.Helper()
	if m.bin == "" {
		m.t.Fatal("Start: not a Mailpit of this test's own (StartMailpit)")
	}
	args := append([]string{"--smtp", m.smtpAddr, "--listen", m.api[len("http://"):],
		"--database", filepath.Join(m.dir, "mailpit.db"), "--disable-version-check", "--smtp-disable-rdns", "--quiet"}, m.extra...)
	m.cmd = exec.Command(m.bin, args...) // #nosec G204 -- the pinned binary, test-only
	log, err := os.OpenFile(filepath.Join(m.dir, "mailpit.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		m.t.Fatal(err)
	}
	m.cmd.Stdout, m.cmd.Stderr = log, log
	if err := m.cmd.Start(); err != nil {
		_ = log.Close()
		m.t.Fatalf("start mailpit: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = m.cmd.Wait(); _ = log.Close(); close(done) }()
	m.done = done
	Eventually(m.t, 15*time.Second, "mailpit answering on "+m.smtpAddr+" and "+m.api, func() bool {
		select {
		case <-done:
			m.t.Fatalf("mailpit exited at start; see %s", filepath.Join(m.dir, "mailpit.log"))
		default:
		}
		for _, addr := range []string{m.smtpAddr, m.api[len("http://"):]} {
			c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
			if err != nil {
				return false
			}
			_ = c.Close()
		}
		return true
	})
}

// Stop stops a throwaway Mailpit (SIGTERM, then SIGKILL after 10 s) and
// waits for it to exit; its ports then refuse connections.
func (m *Mailpit) Stop() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	m.cmd = nil
}

// MailAddress is an address in Mailpit's answers.
type MailAddress struct {
	Name    string
	Address string
}

// MailSummary is a message in a search's answer.
type MailSummary struct {
	ID        string
	MessageID string
	From      MailAddress
	To        []MailAddress
	Subject   string
}

// MailPart is an attachment or inline part of a message.
type MailPart struct {
	PartID      string
	FileName    string
	ContentType string
	ContentID   string
	Size        int
}

// MailMessage is a whole message as Mailpit parsed it.
type MailMessage struct {
	ID          string
	MessageID   string
	From        MailAddress
	To          []MailAddress
	Subject     string
	Text        string
	HTML        string
	Inline      []MailPart
	Attachments []MailPart
}

func (m *Mailpit) get(path string, into any) {
	m.t.Helper()
	res, err := m.hc.Get(m.api + path)
	if err != nil {
		m.t.Fatalf("mailpit GET %s: %v", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<10))
		m.t.Fatalf("mailpit GET %s: %s %s", path, res.Status, b)
	}
	if s, ok := into.(*[]byte); ok {
		if *s, err = io.ReadAll(res.Body); err != nil {
			m.t.Fatal(err)
		}
		return
	}
	if err := json.NewDecoder(res.Body).Decode(into); err != nil {
		m.t.Fatalf("mailpit GET %s: %v", path, err)
	}
}

// Search returns the messages matching a Mailpit search query
// ("to:ADDR", "subject:WORD"), newest first, at most 1 000.
func (m *Mailpit) Search(query string) []MailSummary {
	m.t.Helper()
	var res struct{ Messages []MailSummary }
	m.get("/api/v1/search?limit=1000&query="+url.QueryEscape(query), &res)
	return res.Messages
}

// To returns the messages sent to addr, newest first.
func (m *Mailpit) To(addr string) []MailSummary {
	m.t.Helper()
	return m.Search(fmt.Sprintf("to:%q", addr))
}

// Message returns one message with its parts.
func (m *Mailpit) Message(id string) MailMessage {
	m.t.Helper()
	var msg MailMessage
	m.get("/api/v1/message/"+url.PathEscape(id), &msg)
	return msg
}

// Part returns the bytes of a message's attachment or inline part.
func (m *Mailpit) Part(id, partID string) []byte {
	m.t.Helper()
	var b []byte
	m.get("/api/v1/message/"+url.PathEscape(id)+"/part/"+url.PathEscape(partID), &b)
	return b
}

// Chaos sets one of Mailpit's fault triggers (a Mailpit started with
// --enable-chaos): kind Sender, Recipient or Authentication answered with
// SMTP code for probability percent of the commands (0 turns it off).
func (m *Mailpit) Chaos(kind string, code, probability int) {
	m.t.Helper()
	body := fmt.Sprintf(`{%q: {"ErrorCode": %d, "Probability": %d}}`, kind, code, probability)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPut, m.api+"/api/v1/chaos", strings.NewReader(body))
	if err != nil {
		m.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := m.hc.Do(req)
	if err != nil {
		m.t.Fatalf("mailpit chaos: %v", err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		m.t.Fatalf("mailpit chaos: %s", res.Status)
	}
}

// DeleteAll deletes every message (of a throwaway Mailpit: others' tests
// read the shared one).
func (m *Mailpit) DeleteAll() {
	m.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, m.api+"/api/v1/messages", nil)
	if err != nil {
		m.t.Fatal(err)
	}
	res, err := m.hc.Do(req)
	if err != nil {
		m.t.Fatalf("mailpit delete all: %v", err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		m.t.Fatalf("mailpit delete all: %s", res.Status)
	}
}
