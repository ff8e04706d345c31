package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"seatd/internal/testenv"
)

// notDistributed lists the tables that are not distributed by org_id,
// with why and what Citus does with them (docs/scaling.md).
var notDistributed = map[string]string{
	// Its id is the distribution value of every other table. A reference
	// table (a copy on every worker): every tenant table's foreign key to
	// it stays valid, and a slug stays unique across the deployment, as the
	// organization's URLs (/o/{org}/...) need.
	"organizations": "reference",
	// The session store (scs): a session is loaded by its token alone,
	// before anyone is known, and a visitor's session has no organization
	// (org_id NULL). Local to the coordinator, or moved to Redis.
	"sessions": "local",
	// The sessions' device index (web/session): read with a session's
	// token, deleted with its session (a foreign key with ON DELETE
	// CASCADE). Local to the coordinator, with the sessions.
	"user_sessions": "local",
	// tern's migration bookkeeping: one row. Local to the coordinator.
	"schema_version": "local",
}

// globalUniques lists the unique indexes of distributed tables that may
// leave org_id out, with why and what replaces them under Citus.
var globalUniques = map[string]string{
	// A request presents its API key alone (auth.APIKeys.Authenticate),
	// and the key carries no organization, so the key is found by its hash
	// across organizations. Under Citus this unique moves to a lookup table
	// keyed by the hash (hash PRIMARY KEY, org_id, key id), a reference
	// table written with the key; the request then reads api_keys with the
	// organization it found there.
	"api_keys_hash_key": "lookup table keyed by the hash",
	// A verification or password-reset link presents its token alone
	// (auth.Accounts.VerifyEmail, ResetPassword): the same lookup table as
	// API keys' hashes.
	"account_tokens_token_hash_key": "lookup table keyed by the hash",
	// An invitation's link presents its token alone
	// (auth.Accounts.AcceptInvitation): the same lookup table again.
	"invitations_token_hash_key": "lookup table keyed by the hash",
}

// TestSchemaDistributable keeps the schema distributable by org_id
// (Citus): every table with an org_id column has org_id in its primary
// key and in every unique index, partial ones included (a worker enforces
// uniqueness only within its own shards), and every foreign key between
// two such tables matches org_id with org_id (a row and the row it points
// to live on one worker). A table without org_id must be one of
// notDistributed. Exceptions are listed above with their reasons.
func TestSchemaDistributable(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()

	// Every table of the schema and whether it has an org_id column.
	rows, err := a.Pool.Query(ctx, `
		SELECT c.relname, EXISTS (SELECT 1 FROM pg_attribute a
		                          WHERE a.attrelid = c.oid AND a.attname = 'org_id' AND NOT a.attisdropped)
		FROM pg_class c
		WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
		ORDER BY c.relname`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	distributed := map[string]bool{} // has org_id and is not listed
	var table string
	var hasOrg bool
	if _, err := pgx.ForEachRow(rows, []any{&table, &hasOrg}, func() error {
		tables = append(tables, table)
		_, listed := notDistributed[table]
		distributed[table] = hasOrg && !listed
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(tables) < 20 {
		t.Fatalf("only %d tables found (%v): is the database migrated?", len(tables), tables)
	}

	var problems []string
	for _, tb := range tables {
		if _, listed := notDistributed[tb]; !listed && !distributed[tb] {
			problems = append(problems, tb+": no org_id column, and not listed as a reference or local table")
		}
	}
	for tb := range notDistributed {
		if !slices.Contains(tables, tb) {
			problems = append(problems, tb+": listed as not distributed but no such table")
		}
	}

	// The primary key and unique indexes of the distributed tables whose
	// key columns leave org_id out.
	rows, err = a.Pool.Query(ctx, `
		SELECT c.relname, i.relname, pg_get_indexdef(x.indexrelid)
		FROM pg_index x
		JOIN pg_class c ON c.oid = x.indrelid
		JOIN pg_class i ON i.oid = x.indexrelid
		WHERE c.relnamespace = 'public'::regnamespace AND x.indisunique
		  AND c.relname <> ALL ($1::text[])
		  AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'org_id' AND NOT a.attisdropped)
		  AND NOT EXISTS (SELECT 1 FROM pg_attribute a
		                  WHERE a.attrelid = c.oid AND a.attname = 'org_id'
		                    AND a.attnum = ANY ((x.indkey::int2[])[0:x.indnkeyatts - 1]))
		ORDER BY 1, 2`, keys(notDistributed))
	if err != nil {
		t.Fatal(err)
	}
	var index, def string
	seen := map[string]bool{}
	if _, err := pgx.ForEachRow(rows, []any{&table, &index, &def}, func() error {
		seen[index] = true
		if _, ok := globalUniques[index]; !ok {
			problems = append(problems, table+": unique index without org_id: "+def)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for ix := range globalUniques {
		if !seen[ix] {
			problems = append(problems, ix+": listed as a global unique, but no such index lacks org_id (drop it from the list)")
		}
	}

	// Foreign keys between distributed tables that do not pair org_id
	// with org_id.
	rows, err = a.Pool.Query(ctx, `
		SELECT c.relname, f.relname, k.conname, pg_get_constraintdef(k.oid)
		FROM pg_constraint k
		JOIN pg_class c ON c.oid = k.conrelid
		JOIN pg_class f ON f.oid = k.confrelid
		WHERE k.contype = 'f' AND c.relnamespace = 'public'::regnamespace
		  AND NOT EXISTS (
		      SELECT 1 FROM unnest(k.conkey, k.confkey) AS p(col, fcol)
		      JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = p.col
		      JOIN pg_attribute fa ON fa.attrelid = k.confrelid AND fa.attnum = p.fcol
		      WHERE a.attname = 'org_id' AND fa.attname = 'org_id')
		ORDER BY 1, 3`)
	if err != nil {
		t.Fatal(err)
	}
	var ref, con string
	if _, err := pgx.ForEachRow(rows, []any{&table, &ref, &con, &def}, func() error {
		switch {
		case !distributed[table]:
			// A reference or local table's key: not placed by org_id.
		case notDistributed[ref] == "reference":
			// A reference table is on every worker.
		default:
			problems = append(problems, table+": foreign key "+con+" to "+ref+" does not match org_id with org_id: "+def)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	if len(problems) > 0 {
		t.Errorf("the schema is not distributable by org_id (see docs/scaling.md):\n  %s", strings.Join(problems, "\n  "))
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
