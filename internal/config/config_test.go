package config

import (
	"strings"
	"testing"
)

func load(t *testing.T, env map[string]string) (Config, error) {
	t.Helper()
	base := map[string]string{"DATABASE_URL": "postgres://u@h:5432/db", "REDIS_URL": "redis://h:6379/0"}
	for k, v := range env {
		base[k] = v
	}
	return Load(func(k string) string { return base[k] })
}

// TestProductionNeedsSecureCookies: serve refuses production without
// COOKIE_SECURE=true; development (the default) and test do not need it.
func TestProductionNeedsSecureCookies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env, secure string
		refused     bool
	}{
		{"production", "", true},
		{"production", "false", true},
		{"production", "true", false},
		{"", "", false}, // development
		{"test", "", false},
	} {
		c, err := load(t, map[string]string{"SEATD_ENV": tc.env, "COOKIE_SECURE": tc.secure, "SEATD_SMTP_URL": "smtp://mail.example:25", "SEATD_TICKET_SECRET": testTicketSecret})
		if err != nil {
			t.Fatal(err)
		}
		err = c.ServeProblem()
		if (err != nil) != tc.refused {
			t.Errorf("SEATD_ENV=%q COOKIE_SECURE=%q: %v, refused want %v", tc.env, tc.secure, err, tc.refused)
		}
		if err != nil && !strings.Contains(err.Error(), "COOKIE_SECURE=true") {
			t.Errorf("refusal does not name COOKIE_SECURE: %v", err)
		}
	}
	if c, _ := load(t, nil); c.Env != EnvDevelopment {
		t.Errorf("default SEATD_ENV %q, want development", c.Env)
	}
}

// TestProductionNeedsSMTP: serve refuses production without
// SEATD_SMTP_URL (mail would never leave the outbox); development and test
// run without it, their mail staying queued.
func TestProductionNeedsSMTP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env, smtp string
		refused   bool
	}{
		{"production", "", true},
		{"production", "smtps://u:p@mail.example", false},
		{"", "", false},
		{"test", "", false},
	} {
		c, err := load(t, map[string]string{"SEATD_ENV": tc.env, "COOKIE_SECURE": "true", "SEATD_SMTP_URL": tc.smtp, "SEATD_TICKET_SECRET": testTicketSecret})
		if err != nil {
			t.Fatal(err)
		}
		err = c.ServeProblem()
		if (err != nil) != tc.refused || (err != nil && !strings.Contains(err.Error(), "SEATD_SMTP_URL")) {
			t.Errorf("SEATD_ENV=%q SEATD_SMTP_URL=%q: %v, want a refusal naming SEATD_SMTP_URL: %v", tc.env, tc.smtp, err, tc.refused)
		}
	}
}

// TestMailSettings: SEATD_MAIL_FROM takes an address or Name <address>
// and refuses anything else; the durations must be positive.
func TestMailSettings(t *testing.T) {
	t.Parallel()
	c, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := c.Sender(); err != nil || a.Address != "no-reply@localhost" {
		t.Errorf("default sender %v, %v", a, err)
	}
	for _, tc := range []struct {
		env map[string]string
		bad string
	}{
		{map[string]string{"SEATD_MAIL_FROM": "Box office <tickets@theatre.example>"}, ""},
		{map[string]string{"SEATD_MAIL_FROM": "tickets@theatre.example"}, ""},
		{map[string]string{"SEATD_MAIL_FROM": "tickets"}, "SEATD_MAIL_FROM"},
		{map[string]string{"SEATD_MAIL_POLL": "0s"}, "SEATD_MAIL_POLL"},
		{map[string]string{"SEATD_MAIL_RETRY_FOR": "-1h"}, "SEATD_MAIL_RETRY_FOR"},
	} {
		_, err := load(t, tc.env)
		if (err != nil) != (tc.bad != "") || (err != nil && !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%v: %v, want an error naming %q", tc.env, err, tc.bad)
		}
	}
}

// TestDemoOnlyInDevelopmentAndTest: the demo seed is allowed in
// development and test only.
func TestDemoOnlyInDevelopmentAndTest(t *testing.T) {
	t.Parallel()
	for env, want := range map[string]bool{"": true, "development": true, "test": true, "production": false} {
		c, err := load(t, map[string]string{"SEATD_ENV": env, "COOKIE_SECURE": "true"})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.DemoAllowed(); got != want {
			t.Errorf("SEATD_ENV=%q: demo allowed %v, want %v", env, got, want)
		}
	}
}

// TestOpsAddr: the ops listener is on loopback by default, "off" turns it
// off, port 0 is taken, SEATD_PPROF_ADDR is its old name, and a bad
// address is refused. It may be a loopback or private address; every
// interface, a public address or a host name only with SEATD_OPS_PUBLIC.
func TestOpsAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
		bad  bool
	}{
		{nil, "127.0.0.1:9090", false},
		{map[string]string{"SEATD_OPS_ADDR": "off"}, "off", false},
		{map[string]string{"SEATD_OPS_ADDR": "127.0.0.1:0"}, "127.0.0.1:0", false},
		{map[string]string{"SEATD_OPS_ADDR": "10.1.2.3:9100"}, "10.1.2.3:9100", false},
		{map[string]string{"SEATD_PPROF_ADDR": "127.0.0.1:6060"}, "127.0.0.1:6060", false},
		{map[string]string{"SEATD_PPROF_ADDR": "127.0.0.1:6060", "SEATD_OPS_ADDR": "127.0.0.1:9191"}, "127.0.0.1:9191", false},
		{map[string]string{"SEATD_OPS_ADDR": "9090"}, "", true},
		{map[string]string{"SEATD_OPS_ADDR": "localhost:9090"}, "localhost:9090", false},
		{map[string]string{"SEATD_OPS_ADDR": "[::1]:9090"}, "[::1]:9090", false},
		{map[string]string{"SEATD_OPS_ADDR": "192.168.1.20:9090"}, "192.168.1.20:9090", false},
		{map[string]string{"SEATD_OPS_ADDR": "[fd12::5]:9090"}, "[fd12::5]:9090", false},
		{map[string]string{"SEATD_OPS_ADDR": ":9090"}, "", true},
		{map[string]string{"SEATD_OPS_ADDR": "0.0.0.0:9090"}, "", true},
		{map[string]string{"SEATD_OPS_ADDR": "[::]:9090"}, "", true},
		{map[string]string{"SEATD_OPS_ADDR": "203.0.113.7:9090"}, "", true},
		{map[string]string{"SEATD_OPS_ADDR": "[2001:db8::7]:9090"}, "", true},
		{map[string]string{"SEATD_OPS_ADDR": "ops.example.com:9090"}, "", true},
		{map[string]string{"SEATD_OPS_ADDR": ":9090", "SEATD_OPS_PUBLIC": "true"}, ":9090", false},
		{map[string]string{"SEATD_OPS_ADDR": "203.0.113.7:9090", "SEATD_OPS_PUBLIC": "true"}, "203.0.113.7:9090", false},
	} {
		c, err := load(t, tc.env)
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), "SEATD_OPS_ADDR") {
				t.Errorf("%v: %v, want a SEATD_OPS_ADDR error", tc.env, err)
			}
			continue
		}
		if err != nil || c.OpsAddr != tc.want {
			t.Errorf("%v: ops %q (%v), want %q", tc.env, c.OpsAddr, err, tc.want)
		}
	}
}

// TestRedisCredentials: SEATD_REDIS_USERNAME and SEATD_REDIS_PASSWORD are
// read verbatim.
func TestRedisCredentials(t *testing.T) {
	t.Parallel()
	c, err := load(t, map[string]string{"SEATD_REDIS_USERNAME": "seatd", "SEATD_REDIS_PASSWORD": " p w "})
	if err != nil {
		t.Fatal(err)
	}
	if c.RedisUsername != "seatd" || c.RedisPassword != " p w " {
		t.Errorf("credentials %q %q", c.RedisUsername, c.RedisPassword)
	}
}

// testTicketSecret is a SEATD_TICKET_SECRET of the right length.
const testTicketSecret = "0123456789abcdef0123456789abcdef"

// TestProductionNeedsTicketSecret: serve refuses production without a
// SEATD_TICKET_SECRET of its own (the published development default does
// not count); development and test get that default; a short secret is
// refused everywhere.
func TestProductionNeedsTicketSecret(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env, secret string
		refused     bool
	}{
		{"production", "", true},
		{"production", DevTicketSecret, true},
		{"production", testTicketSecret, false},
		{"", "", false},
		{"test", "", false},
	} {
		c, err := load(t, map[string]string{"SEATD_ENV": tc.env, "COOKIE_SECURE": "true", "SEATD_TICKET_SECRET": tc.secret, "SEATD_SMTP_URL": "smtp://mail.example:25"})
		if err != nil {
			t.Fatal(err)
		}
		err = c.ServeProblem()
		if (err != nil) != tc.refused {
			t.Errorf("SEATD_ENV=%q SEATD_TICKET_SECRET=%q: %v, refused want %v", tc.env, tc.secret, err, tc.refused)
		}
		if err != nil && !strings.Contains(err.Error(), "SEATD_TICKET_SECRET") {
			t.Errorf("refusal does not name SEATD_TICKET_SECRET: %v", err)
		}
		if tc.env != "production" && tc.secret == "" && c.TicketSecret != DevTicketSecret {
			t.Errorf("SEATD_ENV=%q: ticket secret %q, want the development default", tc.env, c.TicketSecret)
		}
	}
	if _, err := load(t, map[string]string{"SEATD_TICKET_SECRET": "too short"}); err == nil || !strings.Contains(err.Error(), "SEATD_TICKET_SECRET") {
		t.Errorf("short secret: %v, want a SEATD_TICKET_SECRET error", err)
	}
}

// TestProductionRefusesPrivateWebhooks: serve refuses production with
// SEATD_WEBHOOK_ALLOW_PRIVATE; other environments may set it (tests, a
// closed network's development).
func TestProductionRefusesPrivateWebhooks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env     string
		refused bool
	}{{"production", true}, {"development", false}, {"test", false}} {
		c, err := load(t, map[string]string{"SEATD_ENV": tc.env, "COOKIE_SECURE": "true", "SEATD_SMTP_URL": "smtp://mail.example:25",
			"SEATD_TICKET_SECRET": testTicketSecret, "SEATD_WEBHOOK_ALLOW_PRIVATE": "true"})
		if err != nil {
			t.Fatal(err)
		}
		err = c.ServeProblem()
		if (err != nil) != tc.refused || (err != nil && !strings.Contains(err.Error(), "SEATD_WEBHOOK_ALLOW_PRIVATE")) {
			t.Errorf("SEATD_ENV=%s: %v, refused want %v", tc.env, err, tc.refused)
		}
	}
}

// TestPublicURL: SEATD_PUBLIC_URL takes a scheme and a host (a trailing
// slash is dropped) and refuses a path, another scheme or no host.
func TestPublicURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", "http://localhost:8080", true},
		{"https://tickets.example.com/", "https://tickets.example.com", true},
		{"http://127.0.0.1:9000", "http://127.0.0.1:9000", true},
		{"https://tickets.example.com/app", "", false},
		{"ftp://tickets.example.com", "", false},
		{"tickets.example.com", "", false},
		{"https://", "", false},
	} {
		c, err := load(t, map[string]string{"SEATD_PUBLIC_URL": tc.in})
		if (err == nil) != tc.ok {
			t.Errorf("SEATD_PUBLIC_URL=%q: %v, want ok %v", tc.in, err, tc.ok)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), "SEATD_PUBLIC_URL") {
			t.Errorf("SEATD_PUBLIC_URL=%q: error %v does not name it", tc.in, err)
		}
		if tc.ok && c.PublicURL != tc.want {
			t.Errorf("SEATD_PUBLIC_URL=%q: %q, want %q", tc.in, c.PublicURL, tc.want)
		}
	}
}
