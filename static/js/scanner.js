// scanner.js: the door scanner's logic, as an ES module the scanner page
// imports (no inline script: the Content-Security-Policy allows none). It
// admits tickets through the server while the network is up, and keeps
// admitting when it is down: it verifies each code's Ed25519 signature
// with the event's public key (WebCrypto), refuses the revoked tickets and
// those it saw admitted, remembers what it admitted and queues those scans
// in localStorage, and sends the queue when the network is back, where
// the server records them and flags any ticket that got in twice. Its
// state survives a reload of the page; reloading the page itself while
// offline is the page's affair (a service worker, or a page left open).
//
// The page's part:
//
//   import { Scanner } from "/static/js/scanner.<hash>.js";
//   const s = new Scanner({ event: eventId, entrance: "North" });
//   await s.refresh();              // key and lists; again when online
//   const stop = s.start();         // sync and refresh when back online
//   const r = await s.scan(code);   // { result, ticket, seat, at, entrance, offline, ... }
//
// The server's side (package door): GET {api}/events/{event}/checkins/key
// answers door.KeyInfo; POST {api}/events/{event}/checkins {code,
// entrance, scanned_at} answers a door.Result (201 admitted, 409
// already_admitted or cancelled, 404 another event, 422 forged); POST
// {api}/events/{event}/checkins/sync {scans: [door.Scan]} answers
// {results: [door.Result]} in the order of the scans.

// The code's layout (package ticket): version 1, the event, ticket and
// seat ids, then the Ed25519 signature of "seatd-ticket", the
// organization's id and those first 49 bytes; unpadded base64url.
export const CODE_LENGTH = 151;
const PAYLOAD = 49;
const TOKEN = PAYLOAD + 64;
const SIGNED_PREFIX = new TextEncoder().encode("seatd-ticket");

function fromBase64url(s) {
  if (!/^[A-Za-z0-9_-]*$/.test(s)) return null;
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

function toBase64url(b) {
  return btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function uuidOf(b) {
  const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function uuidBytes(s) {
  const h = String(s).replace(/-/g, "");
  if (!/^[0-9a-fA-F]{32}$/.test(h)) return null;
  return Uint8Array.from(h.match(/../g), (x) => parseInt(x, 16));
}

// parseCode reads a code without verifying it: {event, ticket, seat,
// token}, or null when it is not a ticket code. White space around it
// (a typing scanner's newline) is ignored.
export function parseCode(code) {
  code = String(code).trim();
  if (code.length !== CODE_LENGTH) return null;
  let b;
  try {
    b = fromBase64url(code);
  } catch {
    return null;
  }
  // One spelling per code, as the server's strict decoding has it.
  if (!b || b.length !== TOKEN || b[0] !== 1 || toBase64url(b) !== code) return null;
  return { event: uuidOf(b.subarray(1, 17)), ticket: uuidOf(b.subarray(17, 33)), seat: uuidOf(b.subarray(33, 49)), token: b };
}

// importPublicKey turns the key's base64url (KeyInfo.public_key) into a
// WebCrypto key.
export function importPublicKey(b64) {
  return crypto.subtle.importKey("raw", fromBase64url(b64), { name: "Ed25519" }, false, ["verify"]);
}

// verifyCode checks a code for an event of an organization with the
// event's public key: {ok: true, ticket, seat} or {ok: false, result:
// "forged" | "not_found"}, as the server would answer.
export async function verifyCode(key, org, event, code) {
  const c = parseCode(code);
  if (!c) return { ok: false, result: "forged" };
  if (c.event !== String(event).toLowerCase()) return { ok: false, result: "not_found" };
  const orgBytes = uuidBytes(org);
  if (!orgBytes) return { ok: false, result: "forged" };
  const msg = new Uint8Array(SIGNED_PREFIX.length + 16 + PAYLOAD);
  msg.set(SIGNED_PREFIX, 0);
  msg.set(orgBytes, SIGNED_PREFIX.length);
  msg.set(c.token.subarray(0, PAYLOAD), SIGNED_PREFIX.length + 16);
  const ok = await crypto.subtle.verify({ name: "Ed25519" }, key, c.token.subarray(PAYLOAD), msg);
  return ok ? { ok: true, ticket: c.ticket, seat: c.seat } : { ok: false, result: "forged" };
}

// Scanner is one door's scanner for one event.
export class Scanner {
  constructor({ event, entrance = "", api = "/api/v1", storage = globalThis.localStorage, timeout = 1500 }) {
    this.event = String(event).toLowerCase();
    this.entrance = entrance;
    this.api = api;
    this.storage = storage;
    this.timeout = timeout; // ms before a scan gives up on the server and decides offline
    this.storageKey = "seatd:scanner:" + this.event;
    this.state = this.load();
    this.key = null; // the imported public key, once state.info is known
  }

  load() {
    try {
      const s = JSON.parse(this.storage.getItem(this.storageKey) || "null");
      if (s && typeof s === "object") return { info: s.info || null, admitted: s.admitted || {}, queue: s.queue || [], skew: s.skew || 0 };
    } catch {
      // A damaged entry is started again.
    }
    return { info: null, admitted: {}, queue: [], skew: 0 };
  }

  save() {
    this.storage.setItem(this.storageKey, JSON.stringify(this.state));
  }

  // pending is how many offline scans wait to be synced.
  get pending() {
    return this.state.queue.length;
  }

  // now is the scanner's clock set to the server's (as of the last
  // refresh), so scan times from several scanners compare.
  now() {
    return new Date(Date.now() + this.state.skew);
  }

  async request(method, path, body) {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), this.timeout);
    try {
      const res = await fetch(this.api + "/events/" + this.event + path, {
        method,
        headers: body ? { "Content-Type": "application/json", Accept: "application/json" } : { Accept: "application/json" },
        body: body ? JSON.stringify(body) : undefined,
        credentials: "same-origin",
        signal: ctl.signal,
      });
      let data = null;
      try {
        data = await res.json();
      } catch {
        // Not JSON: the status says enough.
      }
      return { status: res.status, data };
    } finally {
      clearTimeout(timer);
    }
  }

  // refresh downloads the event's key, revoked and admitted tickets and
  // seat labels, and sets the clock. It throws when offline; the stored
  // ones stay in use.
  async refresh() {
    const sent = Date.now();
    const { status, data } = await this.request("GET", "/checkins/key");
    if (status !== 200 || !data || !data.public_key) throw new Error("key download failed: " + status);
    this.state.skew = Date.parse(data.at) - (sent + Date.now()) / 2;
    this.state.info = data;
    for (const t of data.admitted || []) {
      if (!this.state.admitted[t]) this.state.admitted[t] = { at: null, entrance: null };
    }
    this.key = null;
    this.save();
    return data;
  }

  async publicKey() {
    if (!this.key && this.state.info) this.key = await importPublicKey(this.state.info.public_key);
    return this.key;
  }

  // scan answers a scanned code: through the server when it answers in
  // time, else offline. The answer has the server's shape ({result,
  // ticket, seat: {id, label}, at, entrance}) and offline: true when the
  // scanner decided alone.
  async scan(code) {
    code = String(code).trim();
    const scannedAt = this.now().toISOString();
    if (globalThis.navigator?.onLine !== false) {
      try {
        const { status, data } = await this.request("POST", "/checkins", { code, entrance: this.entrance, scanned_at: scannedAt });
        if ((status === 201 || status === 409) && data && data.result) {
          if (data.result === "admitted" || data.result === "already_admitted") {
            this.state.admitted[data.ticket] = { at: data.at || null, entrance: data.entrance || null };
            this.save();
          }
          return { ...data, offline: false };
        }
        if (status === 404) return { result: "not_found", offline: false };
        if (status === 422) return { result: "forged", offline: false };
        if (status < 500) return { result: "error", status, offline: false, message: (data && data.message) || "" };
      } catch {
        // The network is down or too slow: decide offline.
      }
    }
    return this.scanOffline(code, scannedAt);
  }

  async scanOffline(code, scannedAt) {
    const info = this.state.info;
    const key = await this.publicKey();
    if (!info || !key) return { result: "error", offline: true, message: "no key for this event yet: connect once to download it" };
    const v = await verifyCode(key, info.org, this.event, code);
    if (!v.ok) return { result: v.result, offline: true };
    const seat = { id: v.seat, label: (info.seats || {})[v.seat] || "" };
    if ((info.revoked || []).includes(v.ticket)) return { result: "cancelled", ticket: v.ticket, seat, offline: true };
    const seen = this.state.admitted[v.ticket];
    if (seen) return { result: "already_admitted", ticket: v.ticket, seat, at: seen.at, entrance: seen.entrance, offline: true };
    this.state.admitted[v.ticket] = { at: scannedAt, entrance: this.entrance };
    this.state.queue.push({ code, entrance: this.entrance, scanned_at: scannedAt });
    this.save();
    return { result: "admitted", ticket: v.ticket, seat, at: scannedAt, entrance: this.entrance, offline: true };
  }

  // sync sends the queued offline scans (1000 at a time) and drops those
  // the server answered; it returns the server's results. Sending a scan
  // twice is harmless (the server answers the same), so a lost reply
  // costs nothing.
  async sync() {
    const results = [];
    while (this.state.queue.length > 0) {
      const batch = this.state.queue.slice(0, 1000);
      const { status, data } = await this.request("POST", "/checkins/sync", { scans: batch });
      if (status !== 200 || !data || !Array.isArray(data.results)) throw new Error("sync failed: " + status);
      this.state.queue = this.state.queue.slice(batch.length);
      this.save();
      results.push(...data.results);
    }
    return results;
  }

  // start syncs and refreshes whenever the browser comes back online, and
  // every `every` ms while it is; it returns a function that stops it.
  // onSync, if given, receives each sync's results (for the page to show
  // flagged tickets).
  start({ every = 60000, onSync = null } = {}) {
    const tick = async () => {
      try {
        const results = await this.sync();
        if (onSync && results.length) onSync(results);
        await this.refresh();
      } catch {
        // Still offline: the next tick or "online" event tries again.
      }
    };
    globalThis.addEventListener("online", tick);
    const timer = setInterval(tick, every);
    return () => {
      globalThis.removeEventListener("online", tick);
      clearInterval(timer);
    };
  }
}
