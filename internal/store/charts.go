package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
	"seatd/internal/chart"
	"seatd/internal/pg"
)

// ChartVersion is one stored version of a chart.
type ChartVersion struct {
	ID        uuid.UUID // the version's own id; events reference it
	ChartID   uuid.UUID
	Version   int
	Name      string
	Seats     int
	Sections  int
	CreatedAt time.Time
	Layout    chart.Chart
}

// Save stores a chart layout, already validated, as the next version
// of chart (a new chart when chart is uuid.Nil, unless org has its quota
// of charts: 409 conflict, Quotas.Charts).
func (s *Charts) Save(ctx context.Context, org, chartID uuid.UUID, c chart.Chart) (ChartVersion, error) {
	return s.SaveAfter(ctx, org, chartID, 0, c)
}

// SaveAfter is Save for an edit of version after of the chart:
// if another version was saved since, it is refused (409 conflict) rather
// than silently replacing that edit. after 0 skips the check.
func (s *Charts) SaveAfter(ctx context.Context, org, chartID uuid.UUID, after int, c chart.Chart) (ChartVersion, error) {
	doc, err := json.Marshal(c)
	if err != nil {
		return ChartVersion{}, err
	}
	v := ChartVersion{ID: uuid.New(), ChartID: chartID, Name: c.Name, Seats: c.SeatCount(), Sections: len(c.Sections), Layout: c}
	err = inTx(ctx, s.db, func(tx pgx.Tx) error {
		if v.ChartID == uuid.Nil {
			v.ChartID = uuid.New()
			if _, err := tx.Exec(ctx, `INSERT INTO charts (id, org_id, name) VALUES ($1, $2, $3)`, v.ChartID, org, c.Name); err != nil {
				return err
			}
			if err := s.checkQuota(ctx, tx, org, quotaCharts); err != nil {
				return err
			}
		} else {
			// Locks the chart row, so two edits get consecutive versions.
			tag, err := tx.Exec(ctx, `UPDATE charts SET name = $3 WHERE org_id = $1 AND id = $2`, org, v.ChartID, c.Name)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return notFoundIfNoRows(pgx.ErrNoRows, "chart")
			}
			if after > 0 {
				// Every writer holds the chart row from here, so the newest
				// version cannot change under this check.
				var latest int
				if err := tx.QueryRow(ctx, `SELECT max(version) FROM chart_versions WHERE org_id = $1 AND chart_id = $2`,
					org, v.ChartID).Scan(&latest); err != nil {
					return err
				}
				if latest != after {
					return apperr.E(apperr.Conflict, "the chart was saved as version %d after version %d was read; load it again and redo the change", latest, after)
				}
			}
		}
		return tx.QueryRow(ctx, `
			INSERT INTO chart_versions (id, org_id, chart_id, version, layout, seats, sections)
			SELECT $1, $2, $3, coalesce(max(version), 0) + 1, $4, $5, $6
			FROM chart_versions WHERE org_id = $2 AND chart_id = $3
			RETURNING version, created_at`, v.ID, org, v.ChartID, doc, v.Seats, v.Sections).Scan(&v.Version, &v.CreatedAt)
	})
	return v, err
}

// Delete deletes a chart of org with all its versions, unless an
// event was made from one of them (an event keeps the version it was made
// from): then it is refused (409 conflict) and nothing changes. The chart
// row is locked first, so no version is saved meanwhile; an event made
// from a version at the same moment either commits first (and the delete
// fails on the events' foreign key: the same refusal) or finds the
// version gone (Events.CreateFromChart: not found); one that holds the
// version past the lock timeout makes the delete a 409 to try again.
func (s *Charts) Delete(ctx context.Context, org, id uuid.UUID) error {
	inUse := func(n int) error {
		made := fmt.Sprintf("%d events were", n)
		if n == 1 {
			made = "an event was"
		}
		return apperr.E(apperr.Conflict, "%s made from this chart, so it cannot be deleted", made)
	}
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		var events int
		err := tx.QueryRow(ctx, `
			WITH c AS (SELECT id FROM charts WHERE org_id = $1 AND id = $2 FOR UPDATE)
			SELECT count(e.id) FROM c
			LEFT JOIN chart_versions v ON v.org_id = $1 AND v.chart_id = c.id
			LEFT JOIN events e ON e.org_id = $1 AND e.chart_version_id = v.id
			GROUP BY c.id`, org, id).Scan(&events)
		if err != nil {
			return notFoundIfNoRows(err, "chart")
		}
		if events > 0 {
			return inUse(events)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM chart_versions WHERE org_id = $1 AND chart_id = $2`, org, id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM charts WHERE org_id = $1 AND id = $2`, org, id)
		return err
	})
	switch {
	case pg.IsForeignKeyViolation(err):
		return inUse(1)
	case pg.IsLockNotAvailable(err):
		// A save of the chart, or an event being made from it, held on
		// past the lock timeout.
		return apperr.E(apperr.Conflict, "the chart is being saved, or an event made from it, right now; try again")
	}
	return err
}

// VersionByID reads one version of a chart of org, layout included;
// its Name is the name the chart had in that version.
func (s *Charts) VersionByID(ctx context.Context, org, versionID uuid.UUID) (ChartVersion, error) {
	v := ChartVersion{ID: versionID}
	var doc []byte
	err := s.db.QueryRow(ctx, `
		SELECT v.chart_id, v.version, v.layout->>'name', v.seats, v.sections, v.created_at, v.layout
		FROM chart_versions v
		WHERE v.org_id = $1 AND v.id = $2`, org, versionID).
		Scan(&v.ChartID, &v.Version, &v.Name, &v.Seats, &v.Sections, &v.CreatedAt, &doc)
	if err != nil {
		return ChartVersion{}, notFoundIfNoRows(err, "chart")
	}
	return v, json.Unmarshal(doc, &v.Layout)
}

// LatestVersion reads the newest version of a chart of org.
func (s *Charts) LatestVersion(ctx context.Context, org, chartID uuid.UUID) (ChartVersion, error) {
	var id uuid.UUID
	err := s.db.QueryRow(ctx, `
		SELECT id FROM chart_versions WHERE org_id = $1 AND chart_id = $2 ORDER BY version DESC LIMIT 1`,
		org, chartID).Scan(&id)
	if err != nil {
		return ChartVersion{}, notFoundIfNoRows(err, "chart")
	}
	return s.VersionByID(ctx, org, id)
}

// VersionNumber reads version n of a chart of org.
func (s *Charts) VersionNumber(ctx context.Context, org, chartID uuid.UUID, n int) (ChartVersion, error) {
	var id uuid.UUID
	err := s.db.QueryRow(ctx, `
		SELECT id FROM chart_versions WHERE org_id = $1 AND chart_id = $2 AND version = $3`,
		org, chartID, n).Scan(&id)
	if err != nil {
		return ChartVersion{}, notFoundIfNoRows(err, "chart version")
	}
	return s.VersionByID(ctx, org, id)
}

// List lists the charts of org with their newest version, by name.
func (s *Charts) List(ctx context.Context, org uuid.UUID) ([]ChartVersion, error) {
	rows, err := s.db.Query(ctx, `
		SELECT DISTINCT ON (c.name, c.id) v.id, c.id, v.version, c.name, v.seats, v.sections, v.created_at
		FROM charts c JOIN chart_versions v ON v.org_id = c.org_id AND v.chart_id = c.id
		WHERE c.org_id = $1
		ORDER BY c.name, c.id, v.version DESC`, org)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ChartVersion, error) {
		var v ChartVersion
		err := r.Scan(&v.ID, &v.ChartID, &v.Version, &v.Name, &v.Seats, &v.Sections, &v.CreatedAt)
		return v, err
	})
}
