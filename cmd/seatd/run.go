package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"

	"seatd/internal/app"
	"seatd/internal/config"
	"seatd/internal/seed"
	"seatd/web"
)

const usage = `usage: seatd [command]

commands:
  serve                 run the server (default); migrates first
  migrate               apply database migrations
  seed demo             create the demo organizations, users and event
  user add -org SLUG -email EMAIL -role ROLE [-password-stdin]
                        create a user (role: buyer, organizer, box_office, door);
                        the password is read from standard input
  user disable -org SLUG -email EMAIL
                        disable a user: they cannot sign in, and their
                        sessions and live sockets end in every process
  user role -org SLUG -email EMAIL -role ROLE
                        change a user's role; their sessions end everywhere
                        and they sign in again with the new role
  reaper-once           expire overdue holds once and exit

configuration comes from environment variables; see README.md`

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	if cmd == "help" || cmd == "-h" || cmd == "--help" {
		_, _ = fmt.Fprintln(stdout, usage)
		return nil
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	// Refused before anything connects.
	if cmd == "serve" {
		if err := cfg.ServeProblem(); err != nil {
			return fmt.Errorf("configuration:\n%w", err)
		}
	}
	if cmd == "seed" && !cfg.DemoAllowed() {
		return fmt.Errorf("refusing to seed demo accounts with a published password when SEATD_ENV=%s (only development or test)", cfg.Env)
	}
	log := newLogger(stderr, cfg.LogLevel)
	switch cmd {
	case "serve", "migrate", "seed", "user", "reaper-once":
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	switch cmd {
	case "migrate":
		return a.Migrate(ctx)
	case "seed":
		return seedCmd(ctx, a, args, stdout)
	case "user":
		return userCmd(ctx, a, args, stdin, stdout)
	case "reaper-once":
		n, err := a.Reaper.Reap(ctx)
		if err == nil {
			_, _ = fmt.Fprintf(stdout, "expired %d holds\n", n)
		}
		return err
	}
	if err := a.Migrate(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	srv := web.New(webDeps(a))
	explicitOps := getenv("SEATD_OPS_ADDR") != "" || getenv("SEATD_PPROF_ADDR") != ""
	opsAddr, stopOps, err := serveOps(cfg.OpsAddr, explicitOps, srv.Ops(), log)
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer stopOps()
	if opsAddr != "" {
		_, _ = fmt.Fprintf(stdout, "seatd ops (metrics, pprof) at http://%s\n", opsAddr)
	}
	log.Info("serving", "addr", ln.Addr().String(), "url", "http://"+displayAddr(ln.Addr().String()))
	_, _ = fmt.Fprintf(stdout, "seatd is running at http://%s\n", displayAddr(ln.Addr().String()))
	return a.Serve(ctx, ln, srv, srv.Shutdown, srv)
}

// webDeps are the parts of the app the HTTP layer uses.
func webDeps(a *app.App) web.Deps {
	return web.Deps{Cfg: a.Cfg, Log: a.Log, Pool: a.Pool, Redis: a.Redis, Store: a.Store,
		Engine: a.Engine, Holds: a.Holds, BoxOffice: a.BoxOffice, Events: a.Events, Waitlist: a.Waitlist, Monitor: a.Monitor,
		Accounts: a.Accounts, Notifier: a.Notifier, Registry: a.Registry,
		Door: a.Door, Tickets: a.TicketKeys, Details: a.BookingDetails,
		Payments: a.Payments, TestPayments: a.TestPayments}
}

func displayAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || host == "::" || host == "0.0.0.0" {
		return "localhost:" + port
	}
	return addr
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

func seedCmd(ctx context.Context, a *app.App, args []string, stdout io.Writer) error {
	if len(args) != 1 || args[0] != "demo" {
		return errors.New("usage: seatd seed demo")
	}
	if err := a.Migrate(ctx); err != nil {
		return err
	}
	if err := seed.Demo(ctx, a.Store, a.Accounts, stdout); err != nil {
		return err
	}
	_, _ = fmt.Fprintln(stdout, "\ndemo logins (password "+seed.DemoPassword+"):")
	for _, slug := range seed.DemoOrgs {
		for _, r := range seed.DemoRoles {
			_, _ = fmt.Fprintf(stdout, "  org %-5s  %-24s %s\n", slug, r.Local+"@"+slug+".example", r.Role)
		}
	}
	return nil
}

func userCmd(ctx context.Context, a *app.App, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) > 0 && (args[0] == "disable" || args[0] == "role") {
		return userChangeCmd(ctx, a, args, stdout)
	}
	if len(args) == 0 || args[0] != "add" {
		return errors.New("usage: seatd user add|disable|role ... (see seatd help)")
	}
	fs := flag.NewFlagSet("user add", flag.ContinueOnError)
	org := fs.String("org", "", "organization slug")
	email := fs.String("email", "", "email address")
	role := fs.String("role", "buyer", "buyer, organizer, box_office or door")
	orgName := fs.String("create-org", "", "create the organization with this display name if it does not exist")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *org == "" || *email == "" {
		return errors.New("user add: -org and -email are required")
	}
	password, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	password = strings.TrimRight(password, "\r\n")
	o, err := a.Store.Accounts.OrgBySlug(ctx, *org)
	if err != nil && *orgName != "" {
		o, err = a.Store.Accounts.CreateOrg(ctx, *org, *orgName)
	}
	if err != nil {
		return fmt.Errorf("organization %q: %w", *org, err)
	}
	u, err := a.Accounts.Create(ctx, o.ID, *email, password, *role)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stdout, "created %s %s in %s (%s)\n", u.Role, u.Email, o.Slug, u.ID)
	return nil
}
