package payment

import (
	"strconv"
	"strings"
	"time"

	"seatd/internal/apperr"
)

// The test provider's cards. Any expiry to come and any CVC go with them,
// as on Stripe's test mode.
const (
	CardSucceeds = "4242424242424242" // paid at once: payment_intent.succeeded
	CardDeclined = "4000000000000002" // declined: payment_intent.payment_failed
	// CardDelayed is paid after a delay: payment_intent.processing at once,
	// payment_intent.succeeded when TestProviderConfig.SettleAfter has
	// passed. (On Stripe's own test mode this number asks for 3-D Secure;
	// the test provider has no such step and uses it for the delay.)
	CardDelayed = "4000000000003220"
)

// TestCard is a card the test provider's page lists.
type TestCard struct {
	Number  string // grouped by four, as printed on a card
	Outcome string // what paying with it does, for the page
}

// TestCards lists the test cards, the ones that succeed first.
func TestCards() []TestCard {
	return []TestCard{
		{group(CardSucceeds), "succeeds at once"},
		{group(CardDelayed), "processing first, succeeds a few seconds later"},
		{group(CardDeclined), "is declined"},
	}
}

func group(n string) string {
	var b strings.Builder
	for i, r := range n {
		if i > 0 && i%4 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Card is what the buyer typed on the test provider's card page.
type Card struct {
	Number string // spaces and dashes allowed
	Expiry string // MM/YY (or MM/YYYY)
	CVC    string
	Name   string
}

// check reads c at now: the normalized number, or an Invalid error naming
// each field that is wrong, like a card form would.
func (c Card) check(now time.Time) (string, error) {
	fields := map[string]string{}
	number := strings.NewReplacer(" ", "", "-", "").Replace(c.Number)
	switch number {
	case CardSucceeds, CardDeclined, CardDelayed:
	default:
		if !luhn(number) {
			fields["number"] = "is not a valid card number"
		} else {
			fields["number"] = "no money moves here: use one of the test cards listed on this page"
		}
	}
	if !expiryAhead(c.Expiry, now) {
		fields["expiry"] = "must be this month or later, as MM/YY"
	}
	if n := len(c.CVC); (n != 3 && n != 4) || strings.Trim(c.CVC, "0123456789") != "" {
		fields["cvc"] = "must be 3 or 4 digits"
	}
	if len(c.Name) > 200 {
		fields["name"] = "must be at most 200 characters"
	}
	if len(fields) > 0 {
		return "", &apperr.Error{Code: apperr.Invalid, Message: "check the card details", Fields: fields}
	}
	return number, nil
}

// luhn is the card number checksum.
func luhn(n string) bool {
	if len(n) < 12 || len(n) > 19 {
		return false
	}
	sum := 0
	for i := range len(n) {
		d := int(n[len(n)-1-i] - '0')
		if d < 0 || d > 9 {
			return false
		}
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// expiryAhead: MM/YY or MM/YYYY, no earlier than now's month.
func expiryAhead(s string, now time.Time) bool {
	mm, yy, ok := strings.Cut(strings.ReplaceAll(s, " ", ""), "/")
	if !ok {
		return false
	}
	m, err1 := strconv.Atoi(mm)
	y, err2 := strconv.Atoi(yy)
	if err1 != nil || err2 != nil || m < 1 || m > 12 || y < 0 {
		return false
	}
	switch len(yy) {
	case 2:
		y += 2000
	case 4:
	default:
		return false
	}
	return y > now.Year() || (y == now.Year() && m >= int(now.Month()))
}
