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
      var h = Math.floor(left / 3600);
      if (left <= 0) el.textContent = "expired";
      else if (h >= 48) el.textContent = Math.floor(h / 24) + " d " + (h % 24) + " h";
      else if (h >= 1) el.textContent = h + " h " + (m % 60) + " min";
      else el.textContent = m + ":" + (s < 10 ? "0" : "") + s;
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

// The box office: in "select" mode a click on the seat map selects seats
// (for a customer hold or house seats) instead of blocking them; the
// selection lives in hidden inputs of every form that takes it, and
// survives the map's live updates. The print button prints.
(function () {
  "use strict";

  var selected = {}; // seat id -> label

  function selecting() {
    var m = document.querySelector("input[name=map-mode]:checked");
    return m && m.value === "select";
  }

  function render() {
    var ids = Object.keys(selected);
    document.querySelectorAll("#bo-map .seat").forEach(function (el) {
      var id = el.id.replace(/^bo-seat-/, "");
      if (selected[id]) el.setAttribute("data-selected", "true");
      else el.removeAttribute("data-selected");
    });
    document.querySelectorAll("[data-seat-selection]").forEach(function (box) {
      box.textContent = "";
      ids.forEach(function (id) {
        var input = document.createElement("input");
        input.type = "hidden";
        input.name = "seat_id";
        input.value = id;
        box.appendChild(input);
      });
    });
    document.querySelectorAll("[data-selection-list]").forEach(function (el) {
      el.textContent = ids.length ? ids.map(function (id) { return selected[id]; }).join(", ") : "none";
    });
  }

  // Capture phase: runs before htmx's listener on the seat, which must not
  // see a click meant as a selection.
  document.addEventListener("click", function (evt) {
    var seat = evt.target.closest && evt.target.closest("#bo-map .seat");
    if (!seat || !selecting()) return;
    evt.preventDefault();
    evt.stopPropagation();
    var st = seat.getAttribute("data-status");
    if (st !== "available" && st !== "blocked") return;
    var id = seat.id.replace(/^bo-seat-/, "");
    if (selected[id]) delete selected[id];
    else selected[id] = (seat.getAttribute("title") || id).split(" ")[0];
    render();
  }, true);

  document.addEventListener("htmx:afterSettle", render);
  document.addEventListener("htmx:oobAfterSwap", render);

  document.addEventListener("click", function (evt) {
    if (evt.target.matches && evt.target.matches("[data-print]")) window.print();
  });
})();
