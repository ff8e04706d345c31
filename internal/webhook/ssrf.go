package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"seatd/internal/apperr"
)

// Webhook URLs are chosen by tenants, so seatd must not become their way
// into the network it runs in (SSRF). A URL is checked when it is
// registered, and every connection is checked again when it is dialled,
// against the address actually dialled: a name that resolved to a public
// address at registration may resolve to a private one later (DNS
// rebinding), and only the dial sees that.

// blocked are the ranges no delivery may reach, beyond what netip's
// predicates name (loopback, private, link-local, unspecified, multicast).
var blocked = []netip.Prefix{
	// Reserved by the IETF, nothing public in it: besides :: and ::1 it
	// holds the IPv4-compatible form ::a.b.c.d (http://[::127.0.0.1]/),
	// which netip does not unmap and some stacks route to the IPv4
	// address, and the IPv4-translated ::ffff:0:a.b.c.d.
	netip.MustParsePrefix("::/8"),
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64: embeds any IPv4 address
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2002::/16"),      // 6to4: embeds any IPv4 address
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
	netip.MustParsePrefix("::ffff:0:0/96"),  // IPv4-mapped (unmapped before the checks; kept for safety)
	netip.MustParsePrefix("2001::/32"),      // Teredo: embeds an IPv4 address
	netip.MustParsePrefix("169.254.0.0/16"), // link-local, cloud metadata
	netip.MustParsePrefix("fd00:ec2::/32"),  // a cloud's metadata over IPv6 (inside fc00::/7 too)
	netip.MustParsePrefix("255.255.255.255/32"),
}

// Public reports whether a may be reached by a delivery.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range blocked {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// AllowedPort reports whether a delivery may be sent to port: 80, 443,
// or an unprivileged one (1024-65535). The ports under 1024 are where a
// host's own services listen (SSH, SMTP, DNS, databases' admin ports...);
// a receiver has no reason to be there, and a POST with a tenant's body
// aimed at one is a probe or a cross-protocol attack (an HTTP body read as
// SMTP commands). Receivers behind a proxy or on a development port (8080,
// 8443, 3000) stay reachable.
func AllowedPort(port uint16) bool { return port == 80 || port == 443 || port >= 1024 }

// ErrPrivateAddress is returned when a delivery would reach an address
// that is not public.
var ErrPrivateAddress = errors.New("webhook: address is not public")

// ErrPort is returned when a delivery would reach a port AllowedPort
// refuses.
var ErrPort = errors.New("webhook: port not allowed")

// dialControl refuses connections to ports AllowedPort refuses and to
// addresses that are not public. It runs after name resolution, on the
// address about to be connected to.
func dialControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrPrivateAddress, address)
	}
	if !AllowedPort(ap.Port()) {
		return fmt.Errorf("%w: %d", ErrPort, ap.Port())
	}
	if !Public(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrPrivateAddress, ap.Addr())
	}
	return nil
}

// Dialer returns the dialer deliveries use: with allowPrivate false it
// refuses non-public addresses and ports AllowedPort refuses at connect
// time. allowPrivate (a closed network's or a test's, never production's:
// config refuses it there) lifts both, as it lifts them at registration.
func Dialer(allowPrivate bool, timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = dialControl
	}
	return d
}

// Resolver is what CheckURL needs to resolve host names.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// CheckURL validates a webhook URL at registration: http or https, a
// host, no credentials, and (unless allowPrivate) a port AllowedPort
// allows and every address the host resolves to public. The error is an
// apperr Invalid naming the url field.
func CheckURL(ctx context.Context, r Resolver, raw string, allowPrivate bool) (string, error) {
	bad := func(why string) error {
		return &apperr.Error{Code: apperr.Invalid, Message: "the webhook URL " + why,
			Fields: map[string]string{"url": why}}
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "", bad("must be an absolute http or https URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", bad("must use http or https")
	}
	if u.User != nil {
		return "", bad("must not carry credentials")
	}
	if u.Fragment != "" {
		return "", bad("must not have a fragment")
	}
	if len(u.String()) > 2000 {
		return "", bad("must be at most 2000 characters")
	}
	if allowPrivate {
		return u.String(), nil
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || !AllowedPort(uint16(n)) {
			return "", bad("must use port 80, 443 or one from 1024 to 65535")
		}
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		addrs, err = r.LookupNetIP(ctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			return "", bad("has a host name that does not resolve")
		}
	}
	for _, a := range addrs {
		if !Public(a) {
			return "", bad("points to a loopback, private or reserved address")
		}
	}
	return u.String(), nil
}
