// seatd chart editor. The chart is edited in the browser as the JSON the
// charts API takes (docs/architecture.md#charts-and-events) and saved with one request; the server
// validates it and every problem it finds is listed here by its path.
// Nothing is drawn with inline styles (the Content-Security-Policy
// forbids them): the preview is SVG with presentation attributes.
(function () {
  "use strict";

  var root = document.getElementById("chart-editor");
  if (!root) return;

  var SVG = "http://www.w3.org/2000/svg";
  var CELL = 16; // preview pixels per grid unit
  var PALETTE = ["#4f46e5", "#059669", "#d97706", "#dc2626", "#0891b2", "#7c3aed", "#65a30d", "#db2777"];
  var chartId = root.getAttribute("data-chart-id") || "";
  var chart = { name: "", categories: [{ key: "standard", name: "Standard", color: PALETTE[0] }], sections: [] };
  var selected = null; // {s, r, k} indices of the seat being edited
  // The version the editor shows; a save says it, so the server refuses
  // it (409) if someone saved another version meanwhile.
  var version = 0;

  var $ = function (id) { return document.getElementById(id); };
  var nameInput = $("ce-name");
  var form = $("ce-section-form");
  var preview = $("ce-preview");

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function num(name, def) {
    var v = parseInt(form.elements[name].value, 10);
    return isNaN(v) ? def : v;
  }
  function status(msg) { $("ce-status").textContent = msg; }
  function problems(list) {
    var box = $("ce-problems");
    box.textContent = "";
    if (!list || list.length === 0) { box.classList.add("hidden"); return; }
    box.appendChild(el("p", { class: "font-medium" }, list.length + (list.length === 1 ? " problem" : " problems") + "; nothing was saved:"));
    var ul = el("ul", { class: "list-disc pl-5" });
    list.forEach(function (p) { ul.appendChild(el("li", {}, p)); });
    box.appendChild(ul);
    box.classList.remove("hidden");
  }
  function colorOf(key) {
    for (var i = 0; i < chart.categories.length; i++) if (chart.categories[i].key === key) return chart.categories[i].color;
    return "#9ca3af";
  }

  // Row labels count on from the first: A, B, ... Z, AA; 1, 2, 3.
  function nextLabel(l) {
    if (/^\d+$/.test(l)) return String(parseInt(l, 10) + 1);
    var chars = l.split("");
    for (var i = chars.length - 1; i >= 0; i--) {
      var c = chars[i];
      if (c === "Z") { chars[i] = "A"; continue; }
      if (c === "z") { chars[i] = "a"; continue; }
      if (/[A-Ya-y]/.test(c)) { chars[i] = String.fromCharCode(c.charCodeAt(0) + 1); return chars.join(""); }
      return l + "2";
    }
    return (/[a-z]/.test(l) ? "a" : "A") + chars.join("");
  }

  // The section the form describes, generated from its numbers.
  function built() {
    var kind = form.elements.kind.value;
    var cat = form.elements.category.value;
    var sec = { label: form.elements.label.value.trim(), name: form.elements.name.value.trim(), kind: kind };
    if (kind === "ga") {
      sec.capacity = num("capacity", 0);
      if (cat) sec.category = cat;
      return sec;
    }
    var rows = Math.min(num("rows", 1), 500), per = Math.min(num("seats", 1), 500);
    var sp = Math.max(num("spacing", 1), 1), rsp = Math.max(num("row_spacing", 1), 1);
    var curve = Math.max(num("curve", 0), 0), x0 = num("x", 0), y0 = num("y", 0);
    var rtl = form.elements.direction.value === "rtl";
    var label = form.elements.first_row.value.trim() || "A";
    var mid = (per - 1) / 2;
    sec.rows = [];
    for (var r = 0; r < rows; r++) {
      var row = { label: label, seats: [] };
      for (var k = 0; k < per; k++) {
        var d = mid > 0 ? (k - mid) / mid : 0;
        var seat = { number: rtl ? per - k : k + 1, x: x0 + k * sp, y: y0 + r * rsp + Math.round(curve * d * d) };
        if (cat) seat.category = cat;
        row.seats.push(seat);
      }
      sec.rows.push(row);
      label = nextLabel(label);
    }
    return sec;
  }

  // Where the next section goes: below everything drawn so far.
  function suggestOrigin() {
    var maxY = -1;
    eachSeat(function (s) { maxY = Math.max(maxY, s.y); });
    form.elements.x.value = "0";
    form.elements.y.value = String(maxY < 0 ? 1 : maxY + 3); // a line above for the label
    var n = chart.sections.length;
    form.elements.label.value = String.fromCharCode(65 + (n % 26)) + (n >= 26 ? String(Math.floor(n / 26)) : "");
  }

  function eachSeat(f) {
    chart.sections.forEach(function (sec, si) {
      (sec.rows || []).forEach(function (row, ri) {
        row.seats.forEach(function (st, ki) { f(st, si, ri, ki, sec, row); });
      });
    });
  }

  function seatCount() {
    var n = 0;
    eachSeat(function () { n++; });
    return n;
  }

  function drawSeat(g, st, ghost, name, focusable) {
    var cx = st.x * CELL + CELL / 2, cy = st.y * CELL + CELL / 2, r = CELL * 0.38;
    var shape;
    if (st.accessible) {
      shape = svg("rect", { x: cx - r, y: cy - r, width: 2 * r, height: 2 * r });
    } else if (st.companion) {
      shape = svg("polygon", { points: [cx, cy - r - 1, cx + r + 1, cy, cx, cy + r + 1, cx - r - 1, cy].join(" ") });
    } else {
      shape = svg("circle", { cx: cx, cy: cy, r: r });
    }
    shape.setAttribute("fill", colorOf(st.category));
    if (ghost) {
      shape.setAttribute("fill-opacity", "0.35");
      shape.setAttribute("stroke", "#111827");
      shape.setAttribute("stroke-dasharray", "2 2");
    } else {
      shape.setAttribute("class", "ce-seat cursor-pointer");
      shape.setAttribute("role", "button");
      shape.setAttribute("aria-label", name);
      if (focusable) shape.setAttribute("tabindex", "0");
      var t = svg("title", {});
      t.textContent = name;
      shape.appendChild(t);
    }
    g.appendChild(shape);
    return shape;
  }

  function render() {
    var pending = null;
    if (form.elements.label.value.trim() !== "") pending = built();
    var maxX = 10, maxY = 6;
    var all = chart.sections.concat(pending ? [pending] : []);
    all.forEach(function (sec) {
      (sec.rows || []).forEach(function (row) {
        row.seats.forEach(function (st) { maxX = Math.max(maxX, st.x + 2); maxY = Math.max(maxY, st.y + 2); });
      });
    });
    var s = svg("svg", { width: maxX * CELL, height: maxY * CELL, role: "group", "aria-label": "Chart preview", "data-testid": "chart-preview" });
    var g = svg("g", {});
    s.appendChild(g);
    // Seats are Tab stops while there are few; beyond, "Select seat" finds one.
    var focusable = seatCount() <= 1500;
    chart.sections.forEach(function (sec, si) {
      var top = null;
      (sec.rows || []).forEach(function (row) {
        row.seats.forEach(function (st) { if (!top || st.y < top.y || (st.y === top.y && st.x < top.x)) top = st; });
      });
      if (top && top.y > 0) {
        var name = svg("text", { x: top.x * CELL, y: top.y * CELL - 4, "font-size": 10, "font-weight": "bold", fill: "#374151" });
        name.textContent = sec.label + (sec.name ? " · " + sec.name : "");
        g.appendChild(name);
      }
      (sec.rows || []).forEach(function (row, ri) {
        if (row.seats.length > 0) {
          var first = row.seats[0];
          var lbl = svg("text", { x: Math.max(0, first.x * CELL - 2), y: first.y * CELL + CELL * 0.75, "font-size": 9, "text-anchor": "end", fill: "#6b7280" });
          lbl.textContent = row.label;
          if (first.x > 0) g.appendChild(lbl);
        }
        row.seats.forEach(function (st, ki) {
          var shape = drawSeat(g, st, false, "Section " + sec.label + ", row " + row.label + ", seat " + st.number, focusable);
          shape.setAttribute("data-seat", si + "," + ri + "," + ki);
          if (selected && selected.s === si && selected.r === ri && selected.k === ki) {
            shape.setAttribute("stroke", "#111827");
            shape.setAttribute("stroke-width", "2");
          }
        });
      });
    });
    if (pending && pending.rows) {
      pending.rows.forEach(function (row) { row.seats.forEach(function (st) { drawSeat(g, st, true, "", false); }); });
    }
    preview.textContent = "";
    preview.appendChild(s);
    var ga = 0;
    chart.sections.forEach(function (sec) { if (sec.kind === "ga") ga += sec.capacity || 0; });
    $("ce-count").textContent = "· " + seatCount() + " seats" + (ga ? ", " + ga + " standing" : "") + " in " + chart.sections.length + " sections";
  }

  function renderCategories() {
    var box = $("ce-categories");
    box.textContent = "";
    chart.categories.forEach(function (c, i) {
      var row = el("div", { class: "flex flex-wrap items-end gap-2", "data-testid": "category" });
      var key = el("input", { type: "text", value: c.key, maxlength: "32", "aria-label": "Category " + (i + 1) + " key", class: "w-20 rounded border border-gray-300 px-2 py-1" });
      var name = el("input", { type: "text", value: c.name, maxlength: "60", "aria-label": "Category " + (i + 1) + " name", class: "w-24 rounded border border-gray-300 px-2 py-1" });
      var color = el("input", { type: "color", value: c.color, "aria-label": "Category " + (i + 1) + " colour", class: "h-8 w-10" });
      var rm = el("button", { type: "button", class: "rounded border border-gray-300 px-2 py-1 hover:bg-gray-50" }, "Remove");
      rm.setAttribute("aria-label", "Remove category " + (c.name || c.key));
      key.addEventListener("change", function () {
        var old = c.key;
        c.key = key.value.trim();
        // Seats keep their category when its key is renamed.
        eachSeat(function (st) { if (st.category === old) st.category = c.key; });
        chart.sections.forEach(function (sec) { if (sec.category === old) sec.category = c.key; });
        refresh();
      });
      name.addEventListener("change", function () { c.name = name.value; refreshCategoryOptions(); });
      color.addEventListener("input", function () { c.color = color.value; render(); });
      rm.addEventListener("click", function () { chart.categories.splice(i, 1); refresh(); });
      row.appendChild(key); row.appendChild(name); row.appendChild(color); row.appendChild(rm);
      box.appendChild(row);
    });
  }

  function fillOptions(sel, value) {
    sel.textContent = "";
    sel.appendChild(el("option", { value: "" }, "(none)"));
    chart.categories.forEach(function (c) {
      var o = el("option", { value: c.key }, (c.name || c.key) + " (" + c.key + ")");
      if (c.key === value) o.selected = true;
      sel.appendChild(o);
    });
  }
  function refreshCategoryOptions() {
    var cur = form.elements.category.value || (chart.categories[0] && chart.categories[0].key) || "";
    fillOptions(form.elements.category, cur);
    if (selected) fillOptions($("ce-seat-category"), seatAt(selected).category || "");
  }

  function renderSections() {
    var ul = $("ce-sections");
    ul.textContent = "";
    if (chart.sections.length === 0) ul.appendChild(el("li", { class: "text-gray-600" }, "No sections yet."));
    chart.sections.forEach(function (sec, i) {
      var n = 0;
      (sec.rows || []).forEach(function (r) { n += r.seats.length; });
      var li = el("li", { class: "flex items-center gap-2" });
      li.appendChild(el("span", { class: "font-medium" }, sec.label));
      li.appendChild(el("span", { class: "text-gray-600" }, (sec.name ? sec.name + " · " : "") +
        (sec.kind === "ga" ? "standing, " + sec.capacity + " places" : (sec.rows || []).length + " rows, " + n + " seats")));
      var rm = el("button", { type: "button", class: "ml-auto rounded border border-gray-300 px-2 py-0.5 hover:bg-gray-50" }, "Remove");
      rm.setAttribute("aria-label", "Remove section " + sec.label);
      rm.addEventListener("click", function () { chart.sections.splice(i, 1); selected = null; closeSeat(); refresh(); });
      li.appendChild(rm);
      ul.appendChild(li);
    });
  }

  function refresh() {
    renderCategories();
    refreshCategoryOptions();
    renderSections();
    render();
  }

  function toggleKindFields() {
    var kind = form.elements.kind.value;
    form.querySelectorAll("[data-kind]").forEach(function (l) {
      l.classList.toggle("hidden", l.getAttribute("data-kind") !== kind);
    });
  }

  // Seat editing.
  function seatAt(p) { return chart.sections[p.s].rows[p.r].seats[p.k]; }
  function openSeat(p) {
    selected = p;
    var sec = chart.sections[p.s], row = sec.rows[p.r], st = row.seats[p.k];
    $("ce-seat-title").textContent = "Seat " + st.number + ", row " + row.label + ", section " + sec.label;
    fillOptions($("ce-seat-category"), st.category || "");
    $("ce-seat-accessible").checked = !!st.accessible;
    $("ce-seat-companion").checked = !!st.companion;
    $("ce-seat").classList.remove("hidden");
    render();
    $("ce-seat-category").focus();
  }
  function closeSeat() {
    var was = selected;
    selected = null;
    $("ce-seat").classList.add("hidden");
    render();
    if (was) {
      var back = preview.querySelector('[data-seat="' + was.s + "," + was.r + "," + was.k + '"]');
      if (back && back.getAttribute("tabindex") === "0") back.focus();
    }
  }
  function seatFlag(name, value) {
    if (!selected) return;
    var st = seatAt(selected);
    if (value) st[name] = true; else delete st[name];
    render();
  }

  preview.addEventListener("click", function (e) {
    var t = e.target.closest("[data-seat]");
    if (!t) return;
    var p = t.getAttribute("data-seat").split(",").map(Number);
    openSeat({ s: p[0], r: p[1], k: p[2] });
  });
  preview.addEventListener("keydown", function (e) {
    if (e.key !== "Enter" && e.key !== " ") return;
    var t = e.target.closest("[data-seat]");
    if (!t) return;
    e.preventDefault();
    var p = t.getAttribute("data-seat").split(",").map(Number);
    openSeat({ s: p[0], r: p[1], k: p[2] });
  });
  $("ce-seat-category").addEventListener("change", function (e) {
    if (!selected) return;
    var st = seatAt(selected);
    if (e.target.value) st.category = e.target.value; else delete st.category;
    render();
  });
  $("ce-seat-accessible").addEventListener("change", function (e) { seatFlag("accessible", e.target.checked); });
  $("ce-seat-companion").addEventListener("change", function (e) { seatFlag("companion", e.target.checked); });
  $("ce-seat-close").addEventListener("click", closeSeat);
  $("ce-seat").addEventListener("keydown", function (e) { if (e.key === "Escape") closeSeat(); });
  $("ce-seat-remove").addEventListener("click", function () {
    if (!selected) return;
    var row = chart.sections[selected.s].rows[selected.r];
    var st = row.seats.splice(selected.k, 1)[0];
    status("Removed seat " + st.number + " of row " + row.label + ".");
    // An emptied row (and section) goes too: the chart allows neither.
    if (row.seats.length === 0) chart.sections[selected.s].rows.splice(selected.r, 1);
    if (chart.sections[selected.s].rows.length === 0) chart.sections.splice(selected.s, 1);
    var at = selected;
    selected = null;
    $("ce-seat").classList.add("hidden");
    refresh();
    // Keyboard users go on from the seat that took its place (or the
    // one before it), not from the top of the page.
    var next = preview.querySelector('[data-seat="' + at.s + "," + at.r + "," + at.k + '"]') ||
      preview.querySelector('[data-seat="' + at.s + "," + at.r + "," + (at.k - 1) + '"]');
    if (next && next.getAttribute("tabindex") === "0") next.focus(); else $("ce-preview-title").focus();
  });
  $("ce-find").addEventListener("submit", function (e) {
    e.preventDefault();
    var f = e.target.elements, found = null;
    eachSeat(function (st, si, ri, ki, sec, row) {
      if (!found && sec.label === f.section.value.trim() && row.label === f.row.value.trim() && st.number === parseInt(f.number.value, 10)) {
        found = { s: si, r: ri, k: ki };
      }
    });
    if (found) openSeat(found); else status("No such seat.");
  });

  // Building sections.
  form.addEventListener("input", render);
  form.elements.kind.addEventListener("change", function () { toggleKindFields(); render(); });
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var sec = built();
    if (!sec.label) { status("Give the section a label."); form.elements.label.focus(); return; }
    chart.sections.push(sec);
    status("Added section " + sec.label + ".");
    form.elements.name.value = "";
    suggestOrigin();
    refresh();
  });
  $("ce-add-category").addEventListener("click", function () {
    var n = chart.categories.length + 1;
    chart.categories.push({ key: "cat" + n, name: "Category " + n, color: PALETTE[(n - 1) % PALETTE.length] });
    refresh();
    var keys = $("ce-categories").querySelectorAll("input[type=text]");
    if (keys.length) keys[keys.length - 2].focus();
  });
  nameInput.addEventListener("change", function () { chart.name = nameInput.value; });

  // Loading and saving.
  function load(doc, fromServer) {
    chart = { name: doc.name || "", categories: doc.categories || [], sections: doc.sections || [] };
    if (fromServer) version = doc.version || 0;
    nameInput.value = chart.name;
    selected = null;
    $("ce-seat").classList.add("hidden");
    suggestOrigin();
    refresh();
  }

  function describe(body) {
    var list = [];
    var f = body.fields || {};
    Object.keys(f).sort().forEach(function (k) { list.push(k + ": " + f[k]); });
    if (list.length === 0) list.push(body.message || "The chart was refused.");
    return list;
  }

  function send(method, url, type, body) {
    status("Saving…");
    problems(null);
    return fetch(url, { method: method, headers: { "Content-Type": type, Accept: "application/json" }, body: body, credentials: "same-origin" })
      .then(function (res) {
        return res.json().then(function (b) { return { ok: res.ok, body: b }; }, function () { return { ok: false, body: {} }; });
      })
      .then(function (r) {
        if (!r.ok) {
          status("");
          problems(describe(r.body));
          return null;
        }
        chartId = r.body.id;
        version = r.body.version;
        root.setAttribute("data-chart-id", chartId);
        history.replaceState(null, "", "/admin/charts/" + chartId);
        status("Saved version " + r.body.version + " of “" + r.body.name + "”: " + r.body.seats + " seats in " + r.body.sections + " sections.");
        return r.body;
      }, function () { status("The server could not be reached; nothing was saved."); return null; });
  }

  $("ce-save").addEventListener("click", function () {
    chart.name = nameInput.value;
    var body = chartId && version ? { version: version, name: chart.name, categories: chart.categories, sections: chart.sections } : chart;
    send(chartId ? "PUT" : "POST", chartId ? "/api/v1/charts/" + chartId : "/api/v1/charts", "application/json", JSON.stringify(body));
  });

  // A JSON file is loaded into the editor to look at and save; a CSV file
  // is sent to the server as it is (it reads CSV) and the saved chart is
  // loaded back.
  $("ce-file").addEventListener("change", function (e) {
    var file = e.target.files[0];
    if (!file) return;
    file.text().then(function (text) {
      if (/\.json$/i.test(file.name) || file.type === "application/json") {
        try {
          load(JSON.parse(text));
          status("Loaded " + file.name + "; check it and save.");
        } catch (err) {
          problems([file.name + " is not valid JSON."]);
        }
        return;
      }
      var name = nameInput.value.trim() || file.name.replace(/\.csv$/i, "");
      var url = (chartId ? "/api/v1/charts/" + chartId : "/api/v1/charts") + "?name=" + encodeURIComponent(name);
      send(chartId ? "PUT" : "POST", url, "text/csv", text).then(function (saved) {
        if (saved) fetchChart();
      });
    });
    e.target.value = "";
  });

  function fetchChart() {
    return fetch("/api/v1/charts/" + chartId, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (res) { return res.json(); })
      .then(function (doc) { load(doc, true); });
  }

  toggleKindFields();
  if (chartId) {
    fetchChart().then(function () { status(""); });
  } else {
    suggestOrigin();
    refresh();
  }
})();
