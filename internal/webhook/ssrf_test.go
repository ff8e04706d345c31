package webhook_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/internal/webhook"
)

// fakeDNS answers every name with its addresses.
type fakeDNS []netip.Addr

func (f fakeDNS) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	if len(f) == 0 {
		return nil, errors.New("no such host")
	}
	return f, nil
}

// TestCheckURL: registration refuses other schemes, credentials, and any
// host that is or resolves to a loopback, private, link-local,
// unspecified or otherwise non-public address.
func TestCheckURL(t *testing.T) {
	t.Parallel()
	public := fakeDNS{netip.MustParseAddr("93.184.216.34")}
	cases := []struct {
		url  string
		dns  fakeDNS
		okay bool
	}{
		{"https://hooks.example.com/seatd", public, true},
		{"http://93.184.216.34:8080/x", nil, true},
		{"https://[2606:4700::1]/x", nil, true},
		{"ftp://hooks.example.com/", public, false},
		{"file:///etc/passwd", public, false},
		{"gopher://hooks.example.com/", public, false},
		{"hooks.example.com/x", public, false},
		{"https://user:pw@hooks.example.com/", public, false},
		{"http://127.0.0.1/", nil, false},
		{"http://127.8.9.10:9090/metrics", nil, false},
		{"http://[::1]/", nil, false},
		{"http://[::ffff:127.0.0.1]/", nil, false},
		{"http://0.0.0.0/", nil, false},
		{"http://[::]/", nil, false},
		{"http://10.1.2.3/", nil, false},
		{"http://172.16.0.1/", nil, false},
		{"http://192.168.1.1/", nil, false},
		{"http://100.64.0.1/", nil, false},
		{"http://169.254.169.254/latest/meta-data/", nil, false},
		{"http://[fe80::1]/", nil, false},
		{"http://[fd00::1]/", nil, false},
		{"http://[64:ff9b::7f00:1]/", nil, false},
		{"http://224.0.0.1/", nil, false},
		{"http://localhost/", fakeDNS{netip.MustParseAddr("127.0.0.1")}, false},
		{"http://rebind.example/", fakeDNS{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.1")}, false},
		{"http://nowhere.invalid/", fakeDNS{}, false},
		// IPv4 inside IPv6: compatible (not unmapped by netip), mapped,
		// translated, and a name resolving to the compatible form.
		{"http://[::127.0.0.1]/", nil, false},
		{"http://[::10.0.0.1]/", nil, false},
		{"http://[::93.184.216.34]/", nil, false},
		{"http://[::ffff:10.0.0.1]/", nil, false},
		{"http://[::ffff:0:127.0.0.1]/", nil, false},
		{"http://compat.example/", fakeDNS{netip.MustParseAddr("::7f00:1")}, false},
		{"http://[::ffff:93.184.216.34]/x", nil, true},
		// Ports: 80, 443 and 1024 up only.
		{"http://hooks.example.com:80/", public, true},
		{"https://hooks.example.com:443/", public, true},
		{"https://hooks.example.com:8443/", public, true},
		{"http://hooks.example.com:1024/", public, true},
		{"http://hooks.example.com:65535/", public, true},
		{"http://hooks.example.com:22/", public, false},
		{"http://hooks.example.com:25/", public, false},
		{"http://hooks.example.com:1023/", public, false},
		{"http://hooks.example.com:0/", public, false},
		{"http://hooks.example.com:65536/", public, false},
		{"http://hooks.example.com:http/", public, false},
		{"http://[::1]:8080/", nil, false},
	}
	for _, c := range cases {
		_, err := webhook.CheckURL(context.Background(), c.dns, c.url, false)
		if c.okay != (err == nil) {
			t.Errorf("%s: err %v, want ok=%v", c.url, err, c.okay)
			continue
		}
		if err != nil {
			e, ok := apperr.As(err)
			if !ok || e.Code != apperr.Invalid || e.Fields["url"] == "" {
				t.Errorf("%s: %v is not an invalid error on the url field", c.url, err)
			}
		}
	}
	// Allowed by configuration (tests, closed networks): still http(s) only.
	if _, err := webhook.CheckURL(context.Background(), fakeDNS{}, "http://127.0.0.1:8080/", true); err != nil {
		t.Fatal(err)
	}
	if _, err := webhook.CheckURL(context.Background(), fakeDNS{}, "ftp://127.0.0.1/", true); err == nil {
		t.Fatal("ftp allowed")
	}
}

// TestDialRefusesPrivate: a URL that passed registration but whose name now
// resolves to loopback (DNS rebinding) is refused when dialled: the
// receiver never gets a request, and the attempt says why; so is one on
// a port under 1024. Not parallel:
// no other test's worker (which allows loopback) may take the delivery.
func TestDialRefusesPrivate(t *testing.T) {
	a := testenv.App(t, func(c *config.Config) {
		fastRetries(c)
		c.WebhookAllowPrivate = false
	})
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 1)
	seat := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)[0]
	r := newReceiver(t)
	ctx := context.Background()
	// As registration would store it had the name resolved to a public
	// address then.
	ep, err := a.Store.Webhooks.CreateEndpoint(ctx, tn.Org.ID, nil, r.url(), webhook.Types, "whsec_test")
	if err != nil {
		t.Fatal(err)
	}
	// And one on a public address's SSH port, as stored before ports were
	// checked: refused before any connection is made.
	ssh, err := a.Store.Webhooks.CreateEndpoint(ctx, tn.Org.ID, nil, "http://93.184.216.34:22/hook", webhook.Types, "whsec_test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.SetBlocked(ctx, actor(tn.Organizer), ev.ID, seat, true, ""); err != nil {
		t.Fatal(err)
	}
	var ds []store.Delivery
	testsvc.Eventually(t, 5*time.Second, "the delivery attempted", func() bool {
		if _, err := a.Webhooks.Once(ctx); err != nil {
			t.Fatal(err)
		}
		ds, err = a.Store.Webhooks.Deliveries(ctx, tn.Org.ID, ep.ID, 0, 10)
		return err == nil && len(ds) == 1 && ds[0].Attempts > 0 && ds[0].LastError != nil
	})
	if ds[0].State != store.DeliveryPending || ds[0].LastError == nil || !strings.Contains(*ds[0].LastError, "private") {
		t.Fatalf("delivery after a refused dial: %+v", ds[0])
	}
	testsvc.Eventually(t, 5*time.Second, "the delivery to port 22 attempted", func() bool {
		if _, err := a.Webhooks.Once(ctx); err != nil {
			t.Fatal(err)
		}
		ds, err = a.Store.Webhooks.Deliveries(ctx, tn.Org.ID, ssh.ID, 0, 10)
		return err == nil && len(ds) == 1 && ds[0].LastError != nil
	})
	if !strings.Contains(*ds[0].LastError, "port") {
		t.Fatalf("delivery to port 22: %q, want it refused for its port", *ds[0].LastError)
	}
	r.mu.Lock()
	hits := r.hits
	r.mu.Unlock()
	if hits != 0 {
		t.Fatalf("the loopback receiver got %d requests", hits)
	}
	// Given up, so no other test's worker sends them later.
	for _, id := range []uuid.UUID{ep.ID, ssh.ID} {
		if err := a.Store.Webhooks.DeleteEndpoint(ctx, tn.Org.ID, id); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAttemptHidesDialError: an attempt that gets no answer (here a
// port nobody listens on) is recorded with one fixed message, never the
// dial's own error: "connection refused" against "i/o timeout" for a
// host and port a tenant names would map the ports of any host.
func TestAttemptHidesDialError(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, fastRetries)
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close() // nobody listens there now: the dial is refused
	ep, err := webhook.NewEndpoints(a.Store.Webhooks, true).Create(ctx, tn.Org.ID, "http://"+closed+"/hook", webhook.Types)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Store.Webhooks.DeleteEndpoint(ctx, tn.Org.ID, ep.ID) })
	if _, err := a.Holds.SetBlocked(ctx, actor(tn.Organizer), ev.ID, seats[0], true, ""); err != nil {
		t.Fatal(err)
	}
	var got string
	testsvc.Eventually(t, 5*time.Second, "the delivery attempted", func() bool {
		ds, err := a.Store.Webhooks.Deliveries(ctx, tn.Org.ID, ep.ID, 0, 10)
		if err == nil && len(ds) == 1 && ds[0].LastError != nil {
			got = *ds[0].LastError
		}
		return got != ""
	})
	if got != "no answer: the connection failed or timed out" {
		t.Fatalf("a refused connection recorded as %q; want the fixed message", got)
	}
}
