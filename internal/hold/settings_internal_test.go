package hold

import (
	"testing"

	"github.com/google/uuid"

	"seatd/internal/store"
)

// TestSettingsReadBeforeAChangeDoesNotOverwriteIt: the follower's read of
// an event's settings that began before an organizer's change on this
// process (written to the cache at once) does not put the older settings
// back; a read after it does store.
func TestSettingsReadBeforeAChangeDoesNotOverwriteIt(t *testing.T) {
	ev := newEventState(uuid.New(), uuid.New())
	ev.setSettings(store.Event{Status: store.EventDraft})
	read := ev.settings.Load()                             // the follower's read begins
	ev.setSettings(store.Event{Status: store.EventOnSale}) // the change, here
	if ev.setSettingsSince(store.Event{Status: store.EventDraft}, read) {
		t.Fatal("a read from before the change was stored")
	}
	if got := ev.settings.Load().Status; got != store.EventOnSale {
		t.Fatalf("settings %s after the older read, want the change (on_sale)", got)
	}
	read = ev.settings.Load()
	if !ev.setSettingsSince(store.Event{Status: store.EventClosed}, read) || ev.settings.Load().Status != store.EventClosed {
		t.Fatal("a read from after the change was not stored")
	}
}
