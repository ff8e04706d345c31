-- Accounts people can trust (docs/api.md#accounts): verified email,
-- password reset by emailed link, per-device sessions, and each
-- organization's sign-up policy.

-- A buyer who signs up is unverified until they follow the link mailed to
-- them; an unverified buyer can browse but not hold. Accounts that exist
-- already were made before verification existed (by an operator, the
-- demo seed, or a sign-up that could not be verified): they count as
-- verified.
ALTER TABLE users ADD COLUMN email_verified_at timestamptz;
UPDATE users SET email_verified_at = created_at;

-- open: anyone may sign up (and must verify their email); invite_only and
-- closed: public sign-up is refused.
ALTER TABLE organizations ADD COLUMN signup_policy text NOT NULL DEFAULT 'open'
    CHECK (signup_policy IN ('open', 'invite_only', 'closed'));

-- Single-use, expiring tokens mailed to a user: an email verification or
-- a password reset. Only the SHA-256 of the token is stored (a database
-- dump must not hand out links that work); the token is random (32
-- bytes), so a plain hash is enough. The token is presented alone, so its
-- hash is unique across organizations (a lookup table under Citus, as the
-- API keys' hash).
CREATE TABLE account_tokens (
    org_id     uuid NOT NULL,
    id         uuid NOT NULL DEFAULT uuid_v7(),
    user_id    uuid NOT NULL,
    purpose    text NOT NULL CHECK (purpose IN ('verify_email', 'password_reset')),
    token_hash bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    PRIMARY KEY (org_id, id),
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);
-- A user's tokens: spent together by a reset, and their expired ones
-- deleted when a new one is made.
CREATE INDEX account_tokens_user_idx ON account_tokens (org_id, user_id, purpose);

-- The device index of the session store: one row per signed-in session,
-- naming its device (from the User-Agent), the address it signed in from
-- (truncated to its /24 or /64) and when it was last seen. scs writes only
-- the sessions table; a row here is written at sign-in and goes with its
-- session (ON DELETE CASCADE), whatever deletes it: a logout, a revoked
-- device, the expiry cleanup, a disabled account. Local to the
-- coordinator, with the sessions (docs/scaling.md).
CREATE TABLE user_sessions (
    token        text PRIMARY KEY REFERENCES sessions (token) ON DELETE CASCADE,
    id           uuid NOT NULL UNIQUE DEFAULT uuid_v7(),
    org_id       uuid NOT NULL,
    user_id      uuid NOT NULL,
    device       text NOT NULL CHECK (length(device) <= 100),
    ip           text NOT NULL CHECK (length(ip) <= 64),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX user_sessions_user_idx ON user_sessions (org_id, user_id, created_at);

---- create above / drop below ----

DROP TABLE user_sessions;
DROP TABLE account_tokens;
ALTER TABLE organizations DROP COLUMN signup_policy;
ALTER TABLE users DROP COLUMN email_verified_at;
