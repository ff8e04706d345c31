-- Mail is written to an outbox in the transaction that causes it (a sale,
-- a cancellation, a sign-up) and sent over SMTP by a worker in every
-- process (internal/mail): a rolled-back transaction sends nothing, a
-- mail server that is down delays mail without losing it.
--
-- dedupe_key is unique per organization and required: a retried sale (the
-- same Idempotency-Key, a second click) enqueues its confirmation once.
-- The key stays taken while the row is kept (internal/mail: Keep).
-- Keys lead with org_id, as every tenant table's do (docs/scaling.md:
-- distributable by organization).
CREATE TABLE mail_outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY,
    org_id          uuid NOT NULL REFERENCES organizations (id),
    dedupe_key      text NOT NULL CHECK (length(dedupe_key) BETWEEN 1 AND 200),
    recipient       text NOT NULL CHECK (length(recipient) BETWEEN 3 AND 254),
    subject         text NOT NULL CHECK (length(subject) BETWEEN 1 AND 500),
    text_body       text NOT NULL,
    html_body       text NOT NULL DEFAULT '',
    -- queued: to be sent (next_attempt_at says when; a claimed message's
    -- next_attempt_at is its lease); sent; failed: given up.
    status          text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sent', 'failed')),
    attempts        int NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    sent_at         timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- finished_at: when it was sent or given up (pruning reads it).
    finished_at     timestamptz,
    PRIMARY KEY (org_id, id),
    UNIQUE (org_id, dedupe_key)
);

-- The worker's claim: due queued messages, oldest due first.
CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at) WHERE status = 'queued';
-- Pruning of finished messages; the queue's depth and age (metrics) read
-- the partial index above.
CREATE INDEX mail_outbox_finished_idx ON mail_outbox (finished_at) WHERE status <> 'queued';

-- Attachments and inline images, one row each, raw bytes. Not a jsonb
-- column of base64 text on the outbox row: a PDF of tickets is a few
-- hundred KB, and base64 in JSON costs a third more space and a decode,
-- and every claim and status update of the row would drag it along. bytea
-- is stored as is (TOASTed, compressed when it compresses), read only when
-- its message is sent, and deleted with it.
CREATE TABLE mail_attachments (
    org_id       uuid NOT NULL,
    mail_id      bigint NOT NULL,
    position     int NOT NULL,
    filename     text NOT NULL CHECK (length(filename) BETWEEN 1 AND 200),
    content_type text NOT NULL CHECK (length(content_type) BETWEEN 3 AND 200),
    -- content_id is set for an inline image the HTML part shows with
    -- <img src="cid:...">, NULL for an attachment.
    content_id   text CHECK (content_id IS NULL OR length(content_id) BETWEEN 1 AND 200),
    data         bytea NOT NULL,
    PRIMARY KEY (org_id, mail_id, position),
    FOREIGN KEY (org_id, mail_id) REFERENCES mail_outbox (org_id, id) ON DELETE CASCADE
);

-- The sender of an organization's mail; NULL takes SEATD_MAIL_FROM's
-- address and the organization's name.
ALTER TABLE organizations
    ADD COLUMN mail_from_address text CHECK (mail_from_address IS NULL OR length(mail_from_address) BETWEEN 3 AND 254),
    ADD COLUMN mail_from_name text CHECK (mail_from_name IS NULL OR length(mail_from_name) BETWEEN 1 AND 200);

---- create above / drop below ----

ALTER TABLE organizations DROP COLUMN mail_from_name, DROP COLUMN mail_from_address;
DROP TABLE mail_attachments, mail_outbox;
