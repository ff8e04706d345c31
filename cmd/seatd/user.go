package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"seatd/internal/app"
)

// userChangeCmd runs `user disable` and `user role`: the change and the
// deletion of the user's sessions commit together, and the deletion tells
// every seatd process to close the user's sockets and forget its cached
// sessions.
func userChangeCmd(ctx context.Context, a *app.App, args []string, stdout io.Writer) error {
	sub := args[0]
	fs := flag.NewFlagSet("user "+sub, flag.ContinueOnError)
	org := fs.String("org", "", "organization slug")
	email := fs.String("email", "", "email address")
	role := fs.String("role", "", "buyer, organizer, box_office or door (user role)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *org == "" || *email == "" || (sub == "role" && *role == "") {
		if sub == "role" {
			return errors.New("user role: -org, -email and -role are required")
		}
		return errors.New("user disable: -org and -email are required")
	}
	if sub == "disable" && *role != "" {
		return errors.New("user disable: -role does not apply")
	}
	o, err := a.Store.Accounts.OrgBySlug(ctx, *org)
	if err != nil {
		return fmt.Errorf("organization %q: %w", *org, err)
	}
	if sub == "disable" {
		c, err := a.Accounts.Disable(ctx, o.ID, *email)
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintf(stdout, "disabled %s in %s; ended %d sessions\n", c.User.Email, o.Slug, c.Sessions)
		return nil
	}
	c, err := a.Accounts.ChangeRole(ctx, o.ID, *email, *role)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stdout, "%s in %s is now %s; ended %d sessions\n", c.User.Email, o.Slug, c.User.Role, c.Sessions)
	return nil
}
