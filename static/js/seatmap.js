// seatd live seat map. The server renders the venue's overview and the
// open section's seats; this file only (1) keeps a model of every seat
// (state and version, from #venue's data-states/data-versions/data-runs)
// that live frames update, with each section's free count on the
// overview, (2) drops live fragments older than what the page shows,
// (3) runs the hold countdowns from held_until, and (4) asks for a fresh
// map after the socket reconnects, since changes may have been missed
// meanwhile, and (5) keeps the cart's total, note and checkout in step
// with cart lines that arrive live. Nothing here polls the server.
(function () {
  "use strict";

  var A = 97; // "a": available
  // model: n seats in idx order; st the state letter's code, ver the
  // version, sec the section (index of the overview's boxes); free the
  // free seats per section. Only the open section's seats are elements,
  // so a frame for any other seat costs a few array writes.
  var model = null;
  // recent keeps the newest element received for a seat (a frame or a
  // click's answer), so a map rendered before that change but swapped in
  // after it (a reconnect, a section opened) can be brought forward.
  // Bounded: past it, such a seat is fetched again with its section.
  var recent = new Map();
  var RECENT_MAX = 4096;

  function parseModel(v) {
    var states = v.getAttribute("data-states") || "";
    var n = states.length;
    var m = { n: n, st: new Uint8Array(n), ver: new Float64Array(n), sec: new Uint16Array(n), kept: new Uint8Array(n), boxes: [], free: [] };
    for (var i = 0; i < n; i++) m.st[i] = states.charCodeAt(i);
    (v.getAttribute("data-kept") || "").split(",").forEach(function (t) { if (t !== "" && +t < n) m.kept[+t] = 1; });
    var at = 0;
    (v.getAttribute("data-versions") || "").split(",").forEach(function (t) {
      if (!t) return;
      var p = t.split("*"), ver = +p[0], k = p.length > 1 ? +p[1] : 1;
      for (var j = 0; j < k && at < n; j++) m.ver[at++] = ver;
    });
    (v.getAttribute("data-runs") || "").split(" ").forEach(function (r) {
      if (!r) return;
      var p = r.split(":"), from = +p[0], k = +p[1], s = +p[2];
      for (var j = from; j < from + k && j < n; j++) m.sec[j] = s;
    });
    v.querySelectorAll("a[data-sec]").forEach(function (b) { m.boxes[+b.getAttribute("data-sec")] = b; });
    return m;
  }

  // Seats held back for accessible seating count as free only for a
  // buyer who asks for such seats, and for everyone once the release
  // time (on the choosing control) has come.
  function keptBack() {
    var box = document.getElementById("choose");
    var at = box ? Date.parse(box.getAttribute("data-release-at") || "") : NaN;
    var need = box && box.querySelector("input[name=accessible]");
    return !isNaN(at) && Date.now() < at && !(need && need.checked);
  }
  function counted(m, i, back) { return m.st[i] === A && !(back && m.kept[i]); }

  function showFree(k, free) {
    model.free[k] = free;
    var box = model.boxes[k];
    if (!box) return;
    var total = +box.getAttribute("data-total");
    box.setAttribute("data-available", String(free));
    box.setAttribute("data-level", free <= 0 || total === 0 ? "0" : String(Math.ceil(free * 4 / total)));
    box.setAttribute("aria-label", "Section " + box.getAttribute("data-section-key") + ", " + free + " of " + total + " seats free");
    var t = box.querySelector("[data-free]");
    if (t) t.textContent = free + " free";
  }

  // loadModel reads the venue the server rendered and merges the model
  // the page had: per seat the newer version wins, so a change that
  // reached the page while that venue was on its way is not lost. Then
  // every section's count is computed from the merged states, and shown
  // seats older than the model are brought forward.
  function loadModel() {
    var v = document.getElementById("venue");
    if (!v || !v.hasAttribute("data-states")) { model = null; return; }
    var m = parseModel(v), old = model, i;
    recent.forEach(function (el, idx) { if (idx >= m.n || +el.getAttribute("data-version") <= m.ver[idx]) recent.delete(idx); });
    if (old && old.n === m.n) {
      for (i = 0; i < m.n; i++) {
        if (old.ver[i] > m.ver[i]) { m.st[i] = old.st[i]; m.ver[i] = old.ver[i]; }
      }
    }
    model = m;
    recount();
    var stale = false;
    v.querySelectorAll(".seat[data-idx]").forEach(function (el) {
      var idx = +el.getAttribute("data-idx");
      if (!(idx < m.n) || +el.getAttribute("data-version") >= m.ver[idx]) return;
      var r = recent.get(idx);
      if (!r || +r.getAttribute("data-version") !== m.ver[idx]) { stale = true; return; }
      var c = r.cloneNode(true);
      c.className = place(el);
      el.replaceWith(c);
      if (window.htmx) htmx.process(c);
    });
    if (stale && window.htmx) htmx.trigger(v, "resync");
  }

  // recount computes every section's free seats from the model and shows
  // the ones that changed.
  function recount() {
    if (!model) return;
    var back = keptBack(), free = model.boxes.map(function () { return 0; });
    for (var i = 0; i < model.n; i++) if (counted(model, i, back)) free[model.sec[i]]++;
    free.forEach(function (f, k) { if (+model.boxes[k].getAttribute("data-available") !== f) showFree(k, f); else model.free[k] = f; });
  }
  // The hold-back lifting (choose.js) or the buyer asking for accessible
  // seating changes what counts as free.
  document.addEventListener("seatd:holdback", recount);
  document.addEventListener("change", function (evt) {
    if (evt.target.matches && evt.target.matches("#choose input[name=accessible]")) recount();
  });

  // place is a shown seat's classes for the element replacing it: its
  // grid place and category, without htmx's transient ones (a clicked
  // seat is htmx-request until its answer is swapped in).
  function place(el) {
    return el.className.split(/\s+/).filter(function (c) { return c && c.indexOf("htmx-") !== 0; }).join(" ");
  }

  // note records a seat element that arrived (a frame or an answer);
  // false when it is older than what the model has.
  function note(el) {
    if (!model || !el.hasAttribute("data-idx")) return true;
    var idx = +el.getAttribute("data-idx"), ver = +el.getAttribute("data-version");
    if (!(idx < model.n)) return true;
    if (ver < model.ver[idx]) return false;
    recent.delete(idx);
    recent.set(idx, el.cloneNode(true));
    if (recent.size > RECENT_MAX) recent.delete(recent.keys().next().value);
    if (ver === model.ver[idx]) return true;
    var back = keptBack(), was = counted(model, idx, back), k = model.sec[idx];
    model.ver[idx] = ver;
    model.st[idx] = (el.getAttribute("data-status") || "b").charCodeAt(0);
    var now = counted(model, idx, back);
    if (was && !now) showFree(k, model.free[k] - 1);
    else if (!was && now) showFree(k, model.free[k] + 1);
    return true;
  }

  document.addEventListener("htmx:oobBeforeSwap", function (evt) {
    var target = evt.detail.target;
    var frag = evt.detail.fragment;
    var incoming = frag && frag.firstElementChild ? frag.firstElementChild : null;
    if (!target || !incoming || !target.hasAttribute("data-version")) return;
    var shown = parseInt(target.getAttribute("data-version"), 10);
    var next = parseInt(incoming.getAttribute("data-version"), 10);
    if ((!isNaN(shown) && !isNaN(next) && next < shown) || !note(incoming)) {
      evt.preventDefault();
      return;
    }
    // Frames carry no grid place: the seat keeps the one it is shown at.
    if (target.id.indexOf("seat-") === 0) incoming.className = place(target);
  });
  // A live frame names its fragments' targets by id (a seat, a cart line)
  // or by selector, and a page shows only some of them: one section's
  // seats, its own buyer's cart, one page of holds. live-frames (on every
  // live page's socket element) takes the fragments without a target out
  // of a frame before htmx swaps it, which would report each as an error
  // (htmx:oobErrorNoTarget); a seat of a section not shown is noted first,
  // so only the model and its section's count change.
  function oobTarget(el) {
    var v = el.getAttribute("hx-swap-oob") || "true", at = v.indexOf(":");
    if (at >= 0) return document.querySelector(v.slice(at + 1));
    return el.id ? document.getElementById(el.id) : null;
  }
  htmx.defineExtension("live-frames", {
    transformResponse: function (text, xhr) {
      if (xhr) return text; // an HTTP answer: only socket frames pass here
      var t = document.createElement("template"), dropped = false;
      t.innerHTML = text;
      Array.from(t.content.children).forEach(function (el) {
        if (oobTarget(el)) return;
        if (el.classList.contains("seat")) note(el);
        el.remove();
        dropped = true;
      });
      return dropped ? t.innerHTML : text;
    },
  });
  document.addEventListener("DOMContentLoaded", loadModel);
  document.addEventListener("htmx:historyRestore", loadModel);
  var opened = false; // a section link asked for the venue
  document.addEventListener("htmx:afterSwap", function (evt) {
    var v = evt.detail.elt;
    if (!v || v.id !== "venue") return;
    loadModel();
    if (opened) {
      opened = false;
      // Keyboard and screen reader: the heading of the opened section,
      // just before its seats, takes the focus.
      var h = document.getElementById("section-title");
      if (h) { h.focus({ preventScroll: true }); h.scrollIntoView({ block: "nearest" }); }
    }
  });
  // A section on the overview is an SVG link: htmx swaps the venue in
  // place, so the browser must not also follow the link.
  document.addEventListener("click", function (evt) {
    var a = evt.target.closest && evt.target.closest("a[data-section-key]");
    if (a && window.htmx) { evt.preventDefault(); opened = true; }
  });
  // Keyboard: Enter or Space on a focused section opens it.
  document.addEventListener("keydown", function (evt) {
    var a = evt.target.closest && evt.target.closest("a[data-section-key]");
    if (a && (evt.key === "Enter" || evt.key === " ")) {
      evt.preventDefault();
      a.dispatchEvent(new MouseEvent("click", { bubbles: true, cancelable: true }));
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

  // The cart's lines change over the socket too (a hold made in another
  // tab or through the API, a waitlist offer, a hold that ended): after
  // every frame the total is added up again from the lines' prices, in
  // the server's format, and the empty note and checkout follow the
  // lines. A pay form pays for the holds of its checkout: once the lines
  // differ from them, the cart is fetched again (and checkout offered).
  function money(minor, cur, scale) {
    if (!(scale > 0)) return minor + " " + cur;
    var div = Math.pow(10, scale), m = Math.abs(minor), frac = String(m % div);
    while (frac.length < scale) frac = "0" + frac;
    return (minor < 0 ? "-" : "") + Math.floor(m / div) + "." + frac + " " + cur;
  }
  function syncCart() {
    var cart = document.getElementById("cart");
    if (!cart) return;
    var lines = cart.querySelectorAll("#cart-items li[data-hold]");
    var order = [], by = {}, scale = {}, holds = [];
    lines.forEach(function (li) {
      holds.push(li.getAttribute("data-hold"));
      var cur = li.getAttribute("data-currency");
      if (!cur) return;
      if (!(cur in by)) { order.push(cur); by[cur] = 0; scale[cur] = +li.getAttribute("data-scale"); }
      by[cur] += +li.getAttribute("data-price-minor");
    });
    var total = cart.querySelector("[data-cart-total]");
    if (total) {
      total.hidden = order.length === 0;
      var t = total.querySelector("[data-testid=cart-total]");
      if (t) t.textContent = order.map(function (c) { return money(by[c], c, scale[c]); }).join(" + ");
    }
    var empty = cart.querySelector("[data-cart-empty]");
    if (empty) empty.hidden = lines.length > 0;
    var checkout = cart.querySelector("[data-cart-checkout]");
    if (checkout) checkout.hidden = lines.length === 0;
    var pay = cart.querySelector("form[data-cart-pay]");
    if (pay && window.htmx) {
      var listed = Array.prototype.map.call(pay.querySelectorAll("input[name=hold_id]"), function (i) { return i.value; });
      if (listed.sort().join() !== holds.sort().join()) htmx.trigger(cart, "resync");
    }
  }
  document.addEventListener("htmx:wsAfterMessage", syncCart);
  // Whatever changes the cart (a seat's click, checkout, release) syncs
  // on #cart (hx-sync): a re-fetch asked for meanwhile waits for its
  // answer, so it reads what the change made. Answers may still come back
  // in any order (a re-fetch sent first); the cart shows the one sent
  // last, so an answer read before a checkout never puts Checkout back
  // over the checkout's Pay.
  var cartSent = 0, cartShown = 0;
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var t = evt.detail.target;
    if (t && t.id === "cart" && evt.detail.xhr) evt.detail.xhr.cartSeq = ++cartSent;
  });
  document.addEventListener("htmx:beforeSwap", function (evt) {
    var n = evt.detail.xhr && evt.detail.xhr.cartSeq;
    if (!n) return;
    if (n < cartShown) evt.detail.shouldSwap = false;
    else cartShown = n;
  });
  // Also once a swapped cart has settled: htmx wires a new element's
  // triggers only then, so a frame that came just before could not have
  // fetched it.
  document.addEventListener("htmx:afterSettle", syncCart);

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

  // A live frame redraws a hold's row by deleting it and adding it again:
  // the clerk's tick is carried over, by hold, to the row added.
  var ticked = new Set();
  document.addEventListener("htmx:oobBeforeSwap", function (evt) {
    var row = evt.detail.target;
    if (!row || !row.id || row.id.indexOf("hold-") !== 0) return;
    row.querySelectorAll("input[name=hold_id]:checked").forEach(function (c) { ticked.add(c.value); });
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    if (!ticked.size) return;
    document.querySelectorAll("#holds input[name=hold_id]").forEach(function (c) { if (ticked.has(c.value)) c.checked = true; });
    ticked.clear();
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

// Forms marked data-keyed ask the server to pick seats (best seats,
// standing places), so sending one twice would hold twice. While a request
// of such a form is on its way, another submit of it is not sent (a
// double click). Each request carries a key of its own, the same for
// every submit until one is answered, so a submit after one that failed
// or was cut off, which the server may have carried out all the same,
// gets its seats back rather than more. A changed choice is a new request.
(function () {
  "use strict";

  function newKey() {
    var b = new Uint8Array(16);
    crypto.getRandomValues(b); // randomUUID needs a secure context
    return Array.from(b, function (x) { return (x < 16 ? "0" : "") + x.toString(16); }).join("");
  }
  function keyed(elt) { return elt && elt.hasAttribute && elt.hasAttribute("data-keyed"); }

  document.addEventListener("htmx:confirm", function (evt) {
    if (keyed(evt.detail.elt) && evt.detail.elt.hasAttribute("data-sending")) evt.preventDefault();
  });
  document.addEventListener("htmx:configRequest", function (evt) {
    var f = evt.detail.elt;
    if (!keyed(f)) return;
    if (!f.dataset.key) f.dataset.key = newKey();
    evt.detail.parameters.key = f.dataset.key;
  });
  document.addEventListener("htmx:beforeSend", function (evt) {
    if (keyed(evt.detail.elt)) evt.detail.elt.setAttribute("data-sending", "");
  });
  // An answer (seats held or refused) ends the request; one that failed
  // or was cut off keeps its key for the submit that follows.
  document.addEventListener("htmx:afterRequest", function (evt) {
    var f = evt.detail.elt;
    if (!keyed(f)) return;
    f.removeAttribute("data-sending");
    if (evt.detail.successful) delete f.dataset.key;
  });
  ["input", "change"].forEach(function (type) {
    document.addEventListener(type, function () {
      document.querySelectorAll("form[data-keyed]").forEach(function (f) { delete f.dataset.key; });
    });
  });

  // An open section fits its panel: when its seats are wider than the
  // panel (a phone, the box office's column) the grid is zoomed out to the
  // panel's width, so no seat is cut off at the edge. "Larger seats" shows
  // them at full size instead, and the panel scrolls (touch pans it; Tab
  // brings the focused seat into view). Zoom keeps the chart's layout —
  // aisles and row gaps — as it is.
  function fit() {
    document.querySelectorAll("[data-fit-panel]").forEach(function (panel) {
      var grid = panel.querySelector(".venue");
      if (!grid) return;
      var btn = panel.previousElementSibling;
      if (btn && !btn.hasAttribute("data-fit-toggle")) btn = null;
      var full = btn && btn.getAttribute("aria-pressed") === "true";
      grid.style.zoom = "";
      var k = Math.min(1, Math.floor(panel.clientWidth / grid.scrollWidth * 1000) / 1000);
      if (btn) btn.hidden = k >= 1 && !full;
      if (!full && k < 1) grid.style.zoom = String(k);
    });
  }
  var fitQueued = false;
  function fitSoon() {
    if (fitQueued) return;
    fitQueued = true;
    requestAnimationFrame(function () { fitQueued = false; fit(); });
  }
  document.addEventListener("DOMContentLoaded", fit);
  document.addEventListener("htmx:afterSettle", fitSoon);
  window.addEventListener("resize", fitSoon);
  document.addEventListener("click", function (evt) {
    var btn = evt.target.closest && evt.target.closest("[data-fit-toggle]");
    if (!btn) return;
    var full = btn.getAttribute("aria-pressed") !== "true";
    btn.setAttribute("aria-pressed", String(full));
    btn.textContent = full ? "Fit to screen" : "Larger seats";
    fit();
  });
})();
