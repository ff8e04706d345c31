-- Invitations to an organization whose sign-up policy is invite_only
-- (docs/api.md#invitations): an organizer invites an email address; the
-- mailed link, followed once before it expires, makes a verified buyer
-- account with that address (or verifies the account it has already).
-- As with account_tokens, only the SHA-256 of the link's random token is
-- stored, and that hash is unique across organizations (the link is
-- presented alone).
CREATE TABLE invitations (
    org_id      uuid NOT NULL REFERENCES organizations (id),
    id          uuid NOT NULL DEFAULT uuid_v7(),
    email       text NOT NULL CHECK (length(email) <= 254),
    invited_by  uuid NOT NULL,
    token_hash  bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    accepted_at timestamptz,
    revoked_at  timestamptz,
    PRIMARY KEY (org_id, id),
    CHECK (accepted_at IS NULL OR revoked_at IS NULL)
);
-- The organization's list (newest first) and its count of pending ones
-- (the quota).
CREATE INDEX invitations_org_idx ON invitations (org_id, created_at);

---- create above / drop below ----

DROP TABLE invitations;
