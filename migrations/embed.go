// Package migrations holds the numbered SQL migrations, embedded so the
// seatd binary can migrate a database with nothing else on disk.
package migrations

import "embed"

// FS contains every migration file, named NNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
