package pg

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
	pgxuuid "github.com/vgarvardt/pgx-google-uuid/v5"
)

// RegisterUUID teaches a connection's type map to send and read
// uuid.UUID as Postgres's 16 binary bytes.
//
// pgx-google-uuid registers wrappers for this, but pgx consults them only
// after its check for a sql.Scanner target, and uuid.UUID is one: every
// uuid read went through its 36-character text form and was parsed again
// (a string per value, most of the garbage of reading an event's seats or
// a hold batch's rows), and every uuid sent was boxed into the wrapper
// type first. uuidCodec answers both in its own plans, which pgx asks
// before either.
func RegisterUUID(tm *pgtype.Map) {
	pgxuuid.Register(tm) // uuid.NullUUID and the rest of the wrappers
	tm.RegisterType(&pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}})
}

// uuidCodec is pgx-google-uuid's codec with binary plans of its own for
// uuid.UUID values and *uuid.UUID targets (**uuid.UUID, a nullable
// column, reaches the latter through pgx's pointer plan).
type uuidCodec struct{ pgxuuid.UUIDCodec }

func (c uuidCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return encodeUUID{}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

func (c uuidCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return scanUUID{}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

type encodeUUID struct{}

func (encodeUUID) Encode(value any, buf []byte) ([]byte, error) {
	u := value.(uuid.UUID)
	return append(buf, u[:]...), nil
}

type scanUUID struct{}

func (scanUUID) Scan(src []byte, dst any) error {
	if src == nil {
		return fmt.Errorf("cannot scan NULL into *uuid.UUID")
	}
	if len(src) != len(uuid.UUID{}) {
		return fmt.Errorf("invalid length for uuid: %d", len(src))
	}
	copy(dst.(*uuid.UUID)[:], src)
	return nil
}
