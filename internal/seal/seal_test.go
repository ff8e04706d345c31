package seal_test

import (
	"bytes"
	"errors"
	"testing"

	"seatd/internal/seal"
)

// TestBox: a value opens with its box and additional data only: not
// under another secret, another purpose or other additional data, nor
// altered; two sealings of one value differ (a nonce each).
func TestBox(t *testing.T) {
	t.Parallel()
	const secret = "a test secret of at least thirty-two characters"
	b, err := seal.New(secret, "test v1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seal.New("short", "test v1"); err == nil {
		t.Fatal("a short secret was taken")
	}
	plain, ad := []byte("whsec_plain"), []byte("row 1")
	s1, err := b.Seal(plain, ad)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := b.Seal(plain, ad)
	if bytes.Equal(s1, s2) || bytes.Contains(s1, plain) {
		t.Fatalf("sealed %x and %x: equal, or the value shows", s1, s2)
	}
	if got, err := b.Open(s1, ad); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open: %q, %v", got, err)
	}
	other, _ := seal.New(secret+"!", "test v1")
	purpose, _ := seal.New(secret, "test v2")
	altered := bytes.Clone(s1)
	altered[len(altered)-1] ^= 1
	for name, open := range map[string]func() ([]byte, error){
		"another secret":         func() ([]byte, error) { return other.Open(s1, ad) },
		"another purpose":        func() ([]byte, error) { return purpose.Open(s1, ad) },
		"another row":            func() ([]byte, error) { return b.Open(s1, []byte("row 2")) },
		"altered":                func() ([]byte, error) { return b.Open(altered, ad) },
		"shorter than its nonce": func() ([]byte, error) { return b.Open(s1[:5], ad) },
	} {
		if _, err := open(); !errors.Is(err, seal.ErrOpen) {
			t.Errorf("%s: %v, want ErrOpen", name, err)
		}
	}
}
