package bookingmail_test

import (
	"bytes"
	"context"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"

	"seatd/internal/app"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

func actor(u store.User) hold.Actor {
	return hold.Actor{Org: u.OrgID, User: u.ID, Role: hold.Role(u.Role)}
}

// running is an app whose notifier, booking mail worker and mail worker
// run until the test ends, sending to the Mailpit of make test.
func running(t *testing.T) (*app.App, *testsvc.Mailpit) {
	t.Helper()
	mp := testsvc.MailpitFromEnv(t)
	a := testenv.App(t, nil)
	if a.Mail == nil {
		t.Fatal("no mail worker: SEATD_SMTP_URL is not set (run the tests with make test)")
	}
	testenv.Run(t, a.Notifier)
	testenv.Run(t, a.BookingMail)
	testenv.Run(t, a.Mail)
	return a, mp
}

// buy holds seats of ev for buyer and buys them with key, returning the
// booking and the holds bought.
func buy(t *testing.T, a *app.App, buyer store.User, ev uuid.UUID, seats []uuid.UUID, key string) (store.Booking, []uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	res, err := a.Holds.Hold(ctx, actor(buyer), hold.Request{Event: ev, Seats: seats, Source: hold.SourceWeb})
	if err != nil {
		t.Fatalf("hold: %v", err)
	}
	ids := make([]uuid.UUID, len(res.Holds))
	for i, h := range res.Holds {
		ids[i] = h.ID
	}
	b, err := a.Holds.Purchase(ctx, actor(buyer), ev, key, ids)
	if err != nil {
		t.Fatalf("purchase: %v", err)
	}
	return b, ids
}

// queued is how many notices of booking wait.
func queued(t *testing.T, a *app.App, booking uuid.UUID) int {
	t.Helper()
	var n int
	if err := a.Pool.QueryRow(context.Background(), `SELECT count(*) FROM booking_mail WHERE booking_id = $1`, booking).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// decodeQR reads the text of a QR code PNG. The mail's image is a pure
// code (square, upright, quiet zone, nothing around it), so the reader is
// told so: its general finder-pattern search misses about one code in a
// hundred of these that the pure-code path reads.
func decodeQR(t *testing.T, data []byte) string {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("QR image: %v", err)
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_PURE_BARCODE: true})
	if err != nil {
		t.Fatalf("decode QR: %v", err)
	}
	return res.GetText()
}

// TestConfirmation: a purchase's buyer gets one mail with each ticket's QR
// code inline — each decodes to a code that verifies as that ticket of
// that event — and a PDF of the tickets; buying again with the same key
// sends nothing more.
func TestConfirmation(t *testing.T) {
	t.Parallel()
	a, mp := running(t)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)[:2]
	key := "buy-" + uuid.NewString()
	b, holds := buy(t, a, tn.Buyers[0], ev.ID, seats, key)

	to := tn.Buyers[0].Email
	testsvc.Eventually(t, 30*time.Second, "the confirmation in Mailpit", func() bool { return len(mp.To(to)) == 1 })
	msg := mp.Message(mp.To(to)[0].ID)
	if !strings.Contains(msg.Subject, store.FormatReference(b.Reference)) || !strings.Contains(msg.Subject, ev.Name) {
		t.Errorf("subject %q names neither the booking %s nor the event %q", msg.Subject, b.Reference, ev.Name)
	}
	if !strings.Contains(msg.Text, "/bookings/"+b.ID.String()) {
		t.Errorf("the text part does not link the booking page:\n%s", msg.Text)
	}
	if len(msg.Inline) != 2 {
		t.Fatalf("%d inline parts, want a QR code per ticket (2)", len(msg.Inline))
	}
	want := map[uuid.UUID]uuid.UUID{} // ticket -> seat
	for _, tk := range b.Tickets {
		want[tk.ID] = tk.SeatID
	}
	seen := map[uuid.UUID]bool{}
	for _, p := range msg.Inline {
		code := decodeQR(t, mp.Part(msg.ID, p.PartID))
		c, err := a.TicketKeys.Verify(context.Background(), tn.Org.ID, ev.ID, code)
		if err != nil {
			t.Fatalf("the QR code's code does not verify: %v", err)
		}
		if want[c.Ticket] != c.Seat || seen[c.Ticket] {
			t.Errorf("QR code for ticket %s seat %s: not one of the booking's tickets, or twice", c.Ticket, c.Seat)
		}
		seen[c.Ticket] = true
		if !strings.Contains(msg.HTML, "cid:"+p.ContentID) {
			t.Errorf("the HTML part does not show inline part %q", p.ContentID)
		}
	}
	if len(msg.Attachments) != 1 || msg.Attachments[0].ContentType != "application/pdf" {
		t.Fatalf("attachments %+v, want one PDF", msg.Attachments)
	}
	if pdf := mp.Part(msg.ID, msg.Attachments[0].PartID); !bytes.HasPrefix(pdf, []byte("%PDF-")) {
		t.Errorf("the PDF attachment starts %q", pdf[:min(len(pdf), 8)])
	}

	// The same purchase again answers the same booking and queues nothing.
	again, err := a.Holds.Purchase(context.Background(), actor(tn.Buyers[0]), ev.ID, key, holds)
	if err != nil {
		t.Fatalf("repeat purchase: %v", err)
	}
	if again.ID != b.ID || !again.Replayed {
		t.Fatalf("the repeat made booking %s (replayed %v), want %s", again.ID, again.Replayed, b.ID)
	}
	if n := queued(t, a, b.ID); n != 0 {
		t.Fatalf("%d notices queued after the repeat, want 0", n)
	}
	if got := mp.To(to); len(got) != 1 {
		t.Fatalf("%d mails to the buyer, want 1", len(got))
	}
}

// TestCancellation: cancelling one ticket of two mails the buyer which
// ticket was cancelled and that the other still admits; the box office's
// sale mails its customer, without a link to a page they cannot see.
func TestCancellation(t *testing.T) {
	t.Parallel()
	a, mp := running(t)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 10)
	all := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	box := actor(tn.BoxOffice)
	customer := "customer-" + uuid.NewString()[:8] + "@buyers.example"
	res, err := a.Holds.Hold(ctx, box, hold.Request{Event: ev.ID, Seats: all[:2], Source: hold.SourceBoxOffice,
		Customer: &store.Customer{Name: "Ada Lovelace", Email: customer}, Until: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatalf("hold for a customer: %v", err)
	}
	ids := []uuid.UUID{res.Holds[0].ID, res.Holds[1].ID}
	b, err := a.BoxOffice.Sell(ctx, box, ev.ID, uuid.NewString(), ids, "card")
	if err != nil {
		t.Fatalf("sell: %v", err)
	}
	testsvc.Eventually(t, 30*time.Second, "the customer's confirmation", func() bool { return len(mp.To(customer)) == 1 })
	conf := mp.Message(mp.To(customer)[0].ID)
	if strings.Contains(conf.Text, "/bookings/") || !strings.Contains(conf.Text, "Ada Lovelace") {
		t.Errorf("a box-office customer's confirmation should name them and link no page:\n%s", conf.Text)
	}

	if _, err := a.BoxOffice.Cancel(ctx, box, b.ID, []uuid.UUID{b.Tickets[0].ID}, "moved to another date"); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	testsvc.Eventually(t, 30*time.Second, "the cancellation notice", func() bool { return len(mp.To(customer)) == 2 })
	var notice testsvc.MailMessage
	for _, s := range mp.To(customer) {
		if s.ID != conf.ID {
			notice = mp.Message(s.ID)
		}
	}
	if !strings.Contains(notice.Subject, "cancelled") {
		t.Errorf("notice subject %q", notice.Subject)
	}
	for _, want := range []string{"One ticket", "moved to another date", "1 of your tickets are still valid", store.FormatReference(b.Reference)} {
		if !strings.Contains(notice.Text, want) {
			t.Errorf("the notice does not say %q:\n%s", want, notice.Text)
		}
	}
	if len(notice.Inline)+len(notice.Attachments) != 0 {
		t.Errorf("the notice carries %d parts, want none", len(notice.Inline)+len(notice.Attachments))
	}
}
