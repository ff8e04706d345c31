-- Venue charts. A chart is a name an organizer edits; each edit makes a
-- new version, and an event is made from one version and keeps it. A
-- version's layout is read and written only as a whole (to make an event,
-- or to export it), so it is stored as one document: the API's JSON form
-- (internal/chart.Chart), already validated.
CREATE TABLE charts (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id     uuid NOT NULL REFERENCES organizations (id),
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, id)
);

CREATE TABLE chart_versions (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    org_id     uuid NOT NULL,
    chart_id   uuid NOT NULL,
    version    int  NOT NULL CHECK (version > 0),
    layout     jsonb NOT NULL,
    seats      int  NOT NULL CHECK (seats >= 0),
    sections   int  NOT NULL CHECK (sections >= 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (org_id, chart_id, version),
    UNIQUE (org_id, id),
    FOREIGN KEY (org_id, chart_id) REFERENCES charts (org_id, id)
);

---- create above / drop below ----

DROP TABLE chart_versions, charts;
