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

// Staff pages (dashboard, box office). Server-rendered like the rest; this
// only keeps relative times and the expiry forecast current between
// frames, trims the live feed, applies the holds filter to rows added
// live, and drives the "select all" box.
(function () {
  "use strict";

  function ago(el, now) {
    var s = Math.max(0, Math.floor((now - Date.parse(el.getAttribute("data-since"))) / 1000));
    el.textContent = s < 60 ? s + " s ago" : Math.floor(s / 60) + " min ago";
  }

  // data-expiries is "unixSeconds:count ..."; count the holds ending
  // within the next data-window seconds.
  function forecast(el, now) {
    var win = parseInt(el.getAttribute("data-window"), 10) || 0;
    var from = Math.floor(now / 1000), to = from + win, n = 0;
    (el.getAttribute("data-expiries") || "").split(" ").forEach(function (p) {
      var kv = p.split(":"), t = parseInt(kv[0], 10), c = parseInt(kv[1], 10);
      if (t >= from && t <= to && !isNaN(c)) n += c;
    });
    var count = el.querySelector("[data-forecast-count]");
    var noun = el.querySelector("[data-forecast-noun]");
    if (count) count.textContent = String(n);
    if (noun) noun.textContent = n === 1 ? "hold expires" : "holds expire";
  }

  function refresh() {
    var now = Date.now();
    document.querySelectorAll("[data-since]").forEach(function (el) { ago(el, now); });
    document.querySelectorAll("[data-expiries]").forEach(function (el) { forecast(el, now); });
    document.querySelectorAll("[data-max-items]").forEach(function (el) {
      var max = parseInt(el.getAttribute("data-max-items"), 10);
      while (max >= 0 && el.children.length > max) el.removeChild(el.lastElementChild);
    });
  }
  setInterval(refresh, 1000);
  document.addEventListener("DOMContentLoaded", refresh);
  document.addEventListener("htmx:afterSettle", refresh);
  document.addEventListener("htmx:wsAfterMessage", refresh);

  // Rows pushed live ignore the page's filter; drop those it excludes.
  document.addEventListener("htmx:oobBeforeSwap", function (evt) {
    var table = evt.detail.target, frag = evt.detail.fragment;
    if (!table || table.id !== "holds" || !frag || !frag.children) return;
    var section = table.getAttribute("data-filter-section") || "";
    var holder = (table.getAttribute("data-filter-holder") || "").toLowerCase();
    Array.prototype.slice.call(frag.children).forEach(function (row) {
      if ((section && row.getAttribute("data-section") !== section) ||
          (holder && (row.getAttribute("data-holder") || "").toLowerCase().indexOf(holder) < 0)) {
        row.remove();
      }
    });
  });

  document.addEventListener("change", function (evt) {
    var box = evt.target;
    if (!box.matches || !box.matches("[data-select-all]") || !box.form) return;
    box.form.querySelectorAll('input[type=checkbox][name=hold_id]').forEach(function (c) { c.checked = box.checked; });
  });
})();

// Price categories: the legend carries each category's chart colour; the
// map's classes read it from a CSS variable (set through the CSSOM, which
// the style-src policy allows, unlike inline styles).
(function () {
  "use strict";
  function colours() {
    document.querySelectorAll("[data-cat-color]").forEach(function (el) {
      var c = el.getAttribute("data-cat-color");
      if (/^#[0-9a-fA-F]{3,8}$/.test(c)) {
        document.documentElement.style.setProperty("--cat-" + el.getAttribute("data-cat"), c);
      }
    });
  }
  document.addEventListener("DOMContentLoaded", colours);
})();
