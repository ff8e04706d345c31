// seatd live seat map. The server renders every seat; this file only
// (1) drops live fragments older than what the page shows, (2) runs the
// hold countdowns from held_until, and (3) asks for a fresh map after the
// socket reconnects, since changes may have been missed meanwhile.
// Nothing here polls the server.
(function () {
  "use strict";

  document.addEventListener("htmx:oobBeforeSwap", function (evt) {
    var target = evt.detail.target;
    var frag = evt.detail.fragment;
    var incoming = frag && frag.firstElementChild ? frag.firstElementChild : null;
    if (!target || !incoming || !target.hasAttribute("data-version")) return;
    var shown = parseInt(target.getAttribute("data-version"), 10);
    var next = parseInt(incoming.getAttribute("data-version"), 10);
    if (!isNaN(shown) && !isNaN(next) && next < shown) {
      evt.preventDefault();
    }
  });

  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-until]").forEach(function (el) {
      var left = Math.max(0, Math.floor((Date.parse(el.getAttribute("data-until")) - now) / 1000));
      var m = Math.floor(left / 60);
      var s = left % 60;
      el.textContent = left > 0 ? m + ":" + (s < 10 ? "0" : "") + s : "expired";
      el.setAttribute("data-left", String(left));
    });
  }
  setInterval(tick, 1000);
  document.addEventListener("htmx:afterSettle", tick);
  document.addEventListener("DOMContentLoaded", tick);

  // Changes committed between rendering the page and the socket opening
  // (or while it was down) were never sent, so every open refetches the
  // parts that change; from then on the socket keeps them current.
  document.addEventListener("htmx:wsOpen", function () {
    document.querySelectorAll("[data-resync]").forEach(function (el) {
      htmx.trigger(el, "resync");
    });
    document.body.setAttribute("data-live", "connected");
  });
  document.addEventListener("htmx:wsClose", function () {
    document.body.setAttribute("data-live", "reconnecting");
  });
})();
