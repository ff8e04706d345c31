package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
	"seatd/internal/chart"
	"seatd/internal/pg"
)

// CreateFromChart creates a draft event from a version of a chart of
// org: the event's categories (with prices), sections and seats are copied
// from the version, so later versions of the chart never change it. A GA
// section keeps its capacity and gets that many place rows (GARow). The caller has validated
// spec and prices (every category the chart uses has a price). An
// organization with its quota of open events is refused (409 conflict,
// Quotas.Events).
func (s *Events) CreateFromChart(ctx context.Context, org, actor uuid.UUID, v ChartVersion, spec EventSpec, prices []Price) (Event, error) {
	return s.createFromLayout(ctx, org, actor, v.ID, v.Layout, spec, prices)
}

func (s *Events) createFromLayout(ctx context.Context, org, actor, versionID uuid.UUID, c chart.Chart, spec EventSpec, prices []Price) (Event, error) {
	priceOf := make(map[string]Price, len(prices))
	for _, p := range prices {
		priceOf[p.Category] = p
	}
	e := Event{ID: NewID(), OrgID: org, EventSpec: spec, Status: EventDraft, ChartVersionID: versionID}
	// Refused before its seats are made, if it would be at the end anyway.
	if err := s.atQuota(ctx, org, quotaEvents); err != nil {
		return Event{}, err
	}
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		if versionID != uuid.Nil {
			// The chart is share-locked before anything else: a delete of
			// it (which locks it first too) then either ends before this
			// and the chart is gone, or waits for this and finds the
			// event. Meeting only at the version row, the two deadlocked.
			var ok bool
			err := tx.QueryRow(ctx, `
				SELECT true FROM chart_versions v JOIN charts c ON c.org_id = v.org_id AND c.id = v.chart_id
				WHERE v.org_id = $1 AND v.id = $2 FOR SHARE OF c`, org, versionID).Scan(&ok)
			if pg.IsLockNotAvailable(err) {
				return apperr.E(apperr.Conflict, "the chart is being saved or deleted right now; try again")
			}
			if err != nil {
				return notFoundIfNoRows(err, "chart")
			}
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO events (id, org_id, name, venue, starts_at, time_zone, on_sale_at, sales_end_at, hold_ttl_seconds,
			                    max_holds_per_buyer, orphan_rule, accessible_release_at, hold_extension_seconds, waiting_room,
			                    buyer_cancel_hours, status, chart_version_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, 'draft', $16)`,
			append([]any{e.ID, org}, append(specArgs(spec), versionID)...)...); err != nil {
			return err
		}
		for i, cat := range c.Categories {
			p, ok := priceOf[cat.Key]
			if !ok {
				continue // a category no seat uses may go unpriced
			}
			e.Categories = append(e.Categories, Category{Key: cat.Key, Name: cat.Name, Color: cat.Color,
				PriceMinor: p.PriceMinor, Currency: p.Currency})
			if _, err := tx.Exec(ctx, `
				INSERT INTO event_categories (org_id, event_id, key, name, color, position, price_minor, currency)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, org, e.ID, cat.Key, cat.Name, cat.Color, i, p.PriceMinor, p.Currency); err != nil {
				return err
			}
		}
		sections := make([]uuid.UUID, len(c.Sections))
		for pos, sec := range c.Sections {
			sections[pos] = NewID()
			kind := sec.Kind
			if kind == "" {
				kind = chart.Seated
			}
			if _, err := tx.Exec(ctx, `
				INSERT INTO sections (id, org_id, event_id, label, name, position, kind, capacity)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, sections[pos], org, e.ID, sec.Label, sec.Name, pos, kind, sec.Capacity); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, data)
			VALUES ($1, $2, $3, 'event.created', 'event', $2, jsonb_build_object('chart_version_id', $4::uuid))`,
			org, e.ID, actorOrNil(actor), versionID); err != nil {
			return err
		}
		// Streamed: the seats and places are made one at a time as COPY
		// sends them (layoutRows). A big venue's rows take longer than the
		// pool's statement timeout, as in Delete.
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = '60s'`); err != nil {
			return err
		}
		n, err := tx.CopyFrom(ctx, pgx.Identifier{"seats"}, layoutColumns, newLayoutRows(org, e.ID, c, sections))
		if err != nil {
			return err
		}
		e.Seats = int(n)
		if err := seatsMade(ctx, tx, org, e.ID, e.Seats); err != nil {
			return err
		}
		// Last, so the quota's lock is held for the commit only.
		return s.checkQuota(ctx, tx, org, quotaEvents)
	})
	if err != nil {
		return Event{}, fmt.Errorf("create event from chart: %w", err)
	}
	return e, nil
}

func specArgs(spec EventSpec) []any {
	var ttl, maxHolds, extension *int
	if spec.HoldTTL > 0 {
		n := int(spec.HoldTTL.Seconds())
		ttl = &n
	}
	if spec.HoldExtension > 0 {
		n := int(spec.HoldExtension.Seconds())
		extension = &n
	}
	if spec.MaxHoldsPerBuyer > 0 {
		maxHolds = &spec.MaxHoldsPerBuyer
	}
	rule := spec.OrphanRule
	if rule == "" {
		rule = "off"
	}
	var room *WaitingRoom
	if spec.WaitingRoom != (WaitingRoom{}) {
		room = &spec.WaitingRoom
	}
	return []any{spec.Name, spec.Venue, spec.StartsAt, spec.TimeZone, spec.OnSaleAt, spec.SalesEndAt, ttl, maxHolds,
		rule, spec.AccessibleReleaseAt, extension, room, spec.BuyerCancelHours}
}

// EventUpdate is a validated change to an event: its new spec, prices to
// set, and the status it moves to from the status it had when read.
type EventUpdate struct {
	Spec     EventSpec
	Prices   []Price // categories to reprice; others keep theirs
	From, To EventStatus
}

// LockEvent reads an event of org for update inside tx, so a caller can
// validate a change against it and write it with no other change between.
func LockEvent(ctx context.Context, tx pgx.Tx, org, id uuid.UUID) (Event, error) {
	return event(ctx, tx, org, id, "FOR UPDATE OF e")
}

// Update reads an event of org under a row lock, lets change decide
// the update from it (or refuse), and writes it, in one transaction.
func (s *Events) Update(ctx context.Context, org, id, actor uuid.UUID, change func(Event) (EventUpdate, error)) (Event, error) {
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		cur, err := LockEvent(ctx, tx, org, id)
		if err != nil {
			return err
		}
		u, err := change(cur)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `
			UPDATE events SET name = $3, venue = $4, starts_at = $5, time_zone = $6, on_sale_at = $7, sales_end_at = $8,
			       hold_ttl_seconds = $9, max_holds_per_buyer = $10, orphan_rule = $11, accessible_release_at = $12,
			       hold_extension_seconds = $13, waiting_room = $14, buyer_cancel_hours = $15, status = $16
			WHERE org_id = $1 AND id = $2 AND status = $17`,
			append([]any{org, id}, append(specArgs(u.Spec), u.To, u.From)...)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return apperr.E(apperr.Conflict, "the event changed meanwhile; read it again")
		}
		for _, p := range u.Prices {
			tag, err := tx.Exec(ctx, `
				UPDATE event_categories SET price_minor = $4, currency = $5
				WHERE org_id = $1 AND event_id = $2 AND key = $3`, org, id, p.Category, p.PriceMinor, p.Currency)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return &apperr.Error{Code: apperr.Invalid, Message: "the event has no such category",
					Fields: map[string]string{"prices": fmt.Sprintf("category %q is not one of the event's", p.Category)}}
			}
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, data)
			VALUES ($1, $2, $3, 'event.updated', 'event', $2, jsonb_build_object('from', $4::text, 'to', $5::text))`,
			org, id, actorOrNil(actor), u.From, u.To)
		return err
	})
	if err != nil {
		return Event{}, err
	}
	return s.Event(ctx, org, id)
}

// Delete deletes a draft event of org that nobody acted on: no seat
// of it was ever held, blocked or sold, and no buyer joined its waitlist
// (its change feed and its line are empty). Anything else is a conflict:
// an event that was published, or used, can be closed. The event is
// marked deleted rather than removed (migration 027 says why), and from
// its commit on the event reads leave it out. Its seats are marked blocked
// first, under their row locks, before the check: a hold in flight on one
// of them has either committed by then, and the check sees its audit row,
// or waits for this transaction and then finds its seat not available
// (the hold statement re-reads a seat it waited for, not the event row).
// The audit log keeps the event's entries and gains event.deleted.
func (s *Events) Delete(ctx context.Context, org, id, actor uuid.UUID) error {
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		cur, err := LockEvent(ctx, tx, org, id)
		if err != nil {
			return err
		}
		if cur.Status != EventDraft {
			return apperr.E(apperr.Conflict, "only a draft can be deleted; an event that was published can be closed")
		}
		// A big venue's seats take longer than the pool's statement timeout.
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = '60s'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			UPDATE seats SET status = 'blocked', version = version + 1, updated_at = now()
			WHERE org_id = $1 AND event_id = $2 AND status = 'available'`, org, id); err != nil {
			return err
		}
		var used bool
		if err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM audit_log WHERE org_id = $1 AND event_id = $2 AND seat_id IS NOT NULL)
			    OR EXISTS (SELECT 1 FROM audit_log WHERE org_id = $1 AND event_id = $2 AND entity = 'waitlist_entry')`,
			org, id).Scan(&used); err != nil {
			return err
		}
		if used {
			return apperr.E(apperr.Conflict, "seats of this draft were held, blocked or sold, or buyers joined its waitlist, so it cannot be deleted; close it instead")
		}
		if _, err := tx.Exec(ctx, `
			UPDATE events SET status = $3, chart_version_id = NULL WHERE org_id = $1 AND id = $2`, org, id, EventDeleted); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, data)
			VALUES ($1, $2, $3, 'event.deleted', 'event', $2, jsonb_build_object('name', $4::text))`,
			org, id, actorOrNil(actor), cur.Name)
		return err
	})
	if pg.IsLockNotAvailable(err) {
		// A hold on one of its seats held on past the lock timeout.
		return apperr.E(apperr.Conflict, "seats of this draft are being held right now; try again")
	}
	return err
}

// ChartCategoriesUsed lists the category keys seats of a chart use.
func ChartCategoriesUsed(c chart.Chart) map[string]bool {
	used := map[string]bool{}
	for _, sec := range c.Sections {
		for _, r := range sec.Rows {
			for _, st := range r.Seats {
				if st.Category != "" {
					used[st.Category] = true
				}
			}
		}
	}
	return used
}

// actorOrNil is NULL for no actor (the seed).
func actorOrNil(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}

// ByKey reads several events by organization and id in one
// statement (the hold core's settings reload); events not found, or
// deleted, are left out.
func (s *Events) ByKey(ctx context.Context, orgs, ids []uuid.UUID) ([]Event, error) {
	rows, err := s.db.Query(ctx, `
		SELECT e.org_id, e.id, e.name, e.venue, e.starts_at, e.time_zone, e.on_sale_at, e.sales_end_at, e.hold_ttl_seconds,
		       e.max_holds_per_buyer, e.orphan_rule, e.accessible_release_at, e.hold_extension_seconds, e.buyer_cancel_hours, e.status, e.chart_version_id, e.waiting_room, 0,
		       (SELECT coalesce(jsonb_agg(jsonb_build_object('Key', c.key, 'Name', c.name, 'Color', c.color,
		                    'PriceMinor', c.price_minor, 'Currency', c.currency) ORDER BY c.position, c.key), '[]')
		        FROM event_categories c WHERE c.org_id = e.org_id AND c.event_id = e.id)
		FROM unnest($1::uuid[], $2::uuid[]) AS k(org_id, id) JOIN events e ON e.org_id = k.org_id AND e.id = k.id
		WHERE e.status <> 'deleted'`, orgs, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) {
		var org uuid.UUID
		var cats []byte
		e, err := scanEvent(wrapRow{r, &org, &cats}, uuid.Nil)
		if err != nil {
			return e, err
		}
		e.OrgID = org
		return e, json.Unmarshal(cats, &e.Categories)
	})
}

// wrapRow scans a leading column into org and a trailing one into cats
// around the columns scanEvent reads.
type wrapRow struct {
	r    pgx.Row
	org  *uuid.UUID
	cats *[]byte
}

func (w wrapRow) Scan(dest ...any) error {
	return w.r.Scan(append(append([]any{w.org}, dest...), w.cats)...)
}
