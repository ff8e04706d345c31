package store

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// seatDecoder reads seatColumns rows from their binary wire values
// straight into Seats. Loading an event reads every seat (300 000 for a
// stadium) while its first buyers wait; pgx's generic Scan goes through
// reflection and the sql.Scanner of uuid.UUID (text parsing) for each of
// 16 columns, which was ~70% of a cold load's CPU. Row labels and
// categories repeat (a few dozen per event), so they are interned instead
// of allocated per seat: a cache holding millions of seats then holds a
// few hundred strings, not millions of objects for every collection to
// mark.
type seatDecoder struct {
	strs map[string]string
}

func newSeatDecoder() *seatDecoder { return &seatDecoder{strs: map[string]string{}} }

// seatColumnOIDs are the types of seatColumns, in order; the decoder
// insists on them and on binary format (but for text), or the caller scans
// generically.
var seatColumnOIDs = [...]uint32{
	pgtype.UUIDOID, pgtype.UUIDOID, pgtype.TextOID, pgtype.Int4OID, pgtype.Int4OID, pgtype.Int4OID, pgtype.Int4OID,
	pgtype.TextOID, pgtype.Int8OID, pgtype.Int8OID, pgtype.UUIDOID, pgtype.UUIDOID, pgtype.TimestamptzOID,
	pgtype.TextOID, pgtype.BoolOID, pgtype.BoolOID,
}

// binarySeatRows reports whether rows carry seatColumns in binary format.
func binarySeatRows(rows pgx.Rows) bool {
	fds := rows.FieldDescriptions()
	if len(fds) != len(seatColumnOIDs) {
		return false
	}
	for i, fd := range fds {
		// text is the same bytes in either format (pgx asks for text).
		if fd.DataTypeOID != seatColumnOIDs[i] || fd.Format != pgx.BinaryFormatCode && fd.DataTypeOID != pgtype.TextOID {
			return false
		}
	}
	return true
}

// collectSeats reads every row of a seatColumns query; sizeHint is how
// many rows are expected.
func collectSeats(rows pgx.Rows, sizeHint int) ([]Seat, error) {
	defer rows.Close()
	if !binarySeatRows(rows) {
		return pgx.CollectRows(rows, scanSeat)
	}
	d := newSeatDecoder()
	seats := make([]Seat, 0, sizeHint)
	for rows.Next() {
		seats = append(seats, Seat{})
		if err := d.decode(rows.RawValues(), &seats[len(seats)-1]); err != nil {
			return nil, err
		}
	}
	return seats, rows.Err()
}

// pgEpoch is where Postgres counts timestamps from.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func (d *seatDecoder) decode(v [][]byte, s *Seat) error {
	for i, b := range v {
		if b == nil && (i < 10 || i > 12) {
			return fmt.Errorf("seat column %d is NULL", i)
		}
	}
	var err error
	if s.ID, err = uuidOf(v[0]); err != nil {
		return err
	}
	if s.SectionID, err = uuidOf(v[1]); err != nil {
		return err
	}
	s.Row = d.intern(v[2])
	ints := [4]*int{&s.Number, &s.Idx, &s.X, &s.Y}
	for i, p := range ints {
		if len(v[3+i]) != 4 {
			return fmt.Errorf("seat column %d: %d bytes for an int4", 3+i, len(v[3+i]))
		}
		*p = int(int32(binary.BigEndian.Uint32(v[3+i]))) // #nosec G115 -- Postgres int4 is 32 bits
	}
	switch string(v[7]) {
	case string(Available):
		s.Status = Available
	case string(Held):
		s.Status = Held
	case string(Sold):
		s.Status = Sold
	case string(Blocked):
		s.Status = Blocked
	default:
		return fmt.Errorf("seat status %q", v[7])
	}
	if len(v[8]) != 8 || len(v[9]) != 8 {
		return fmt.Errorf("seat version/fence: not int8")
	}
	s.Version = int64(binary.BigEndian.Uint64(v[8])) // #nosec G115 -- Postgres int8 is 64 bits
	s.Fence = int64(binary.BigEndian.Uint64(v[9]))   // #nosec G115 -- Postgres int8 is 64 bits
	if v[10] != nil {
		if s.HoldID, err = uuidOf(v[10]); err != nil {
			return err
		}
	}
	if v[11] != nil {
		if s.HolderID, err = uuidOf(v[11]); err != nil {
			return err
		}
	}
	if v[12] != nil {
		if len(v[12]) != 8 {
			return fmt.Errorf("held_until: not a timestamptz")
		}
		us := int64(binary.BigEndian.Uint64(v[12])) // #nosec G115 -- Postgres timestamptz is 64 bits
		s.HeldUntil = pgEpoch.Add(time.Duration(us) * time.Microsecond)
	}
	s.Category = d.intern(v[13])
	if len(v[14]) != 1 || len(v[15]) != 1 {
		return fmt.Errorf("accessible/companion: not a bool")
	}
	s.Accessible, s.Companion = v[14][0] != 0, v[15][0] != 0
	return nil
}

// intern returns the one string of a row label or category.
func (d *seatDecoder) intern(b []byte) string {
	x, ok := d.strs[string(b)]
	if !ok {
		x = string(b)
		d.strs[x] = x
	}
	return x
}

func uuidOf(b []byte) (uuid.UUID, error) {
	if len(b) != 16 {
		return uuid.UUID{}, fmt.Errorf("uuid of %d bytes", len(b))
	}
	return uuid.UUID(b), nil
}
