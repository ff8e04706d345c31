// choose.js: the seat-choosing control beside the map. Accessible and
// companion seats are held back until the event's release time; the page
// carries that one timestamp, and every open map lifts the hold-back at
// that moment by itself (the server applies the same time to holds), so
// no broadcast is needed and a map opened late or reconnected agrees.
(function () {
  "use strict";
  function setup() {
    var box = document.getElementById("choose");
    if (!box) return;
    var at = Date.parse(box.dataset.releaseAt || "");
    var note = box.querySelector("[data-held-back-note]");
    if (note && !isNaN(at)) note.textContent = "Until " + new Date(at).toLocaleString() + " they are kept for buyers who tick \u201cI need accessible seating\u201d.";
    function apply() {
      var back = !isNaN(at) && Date.now() < at;
      document.body.classList.toggle("accessible-held-back", back);
      if (!back && note) note.textContent = "They are on general sale now.";
      // The map's section counts follow (seatmap.js).
      document.dispatchEvent(new Event("seatd:holdback"));
      return back;
    }
    if (apply()) {
      // Timers cap at about 24.8 days; check again then.
      setTimeout(function again() {
        if (apply()) setTimeout(again, Math.min(at - Date.now() + 50, 2147483647));
      }, Math.min(at - Date.now() + 50, 2147483647));
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
