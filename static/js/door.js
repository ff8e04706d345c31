// door.js: the scanner page (views/door.templ). Codes come from the text
// field (a USB or Bluetooth scanner types the code and Enter) or from the
// camera where the browser offers BarcodeDetector; scanner.js decides
// each through the server, or offline with the event's public key when
// the network is down, and syncs the offline scans when it is back.
const root = document.querySelector("[data-testid=scanner]");
const { Scanner } = await import(root.dataset.scannerModule);
const scanner = new Scanner({ event: root.dataset.event, entrance: root.dataset.entrance });

const form = document.getElementById("scan-form");
const input = document.getElementById("scan-code");
const result = document.getElementById("scan-result");
const verdict = document.getElementById("scan-verdict");
const detail = document.getElementById("scan-detail");
const network = document.getElementById("scan-network");
const pending = document.getElementById("scan-pending");

function status() {
  network.textContent = navigator.onLine ? "online" : "offline: admitting with the event's key";
  pending.textContent = scanner.pending ? scanner.pending + " scans to sync" : "";
}

const words = {
  admitted: ["Admitted", "bg-green-700"],
  already_admitted: ["Already admitted", "bg-red-700"],
  cancelled: ["Cancelled ticket", "bg-red-700"],
  revoked: ["Cancelled ticket", "bg-red-700"],
  not_found: ["Another event", "bg-red-700"],
  other_event: ["Another event", "bg-red-700"],
  forged: ["Not a valid ticket", "bg-red-700"],
  malformed: ["Not a ticket code", "bg-red-700"],
  error: ["Try again", "bg-amber-700"],
};

let hideTimer = 0;
function show(r) {
  const [text, color] = words[r.result] || [r.result, "bg-red-700"];
  result.className = result.className.replace(/\bbg-\S+/g, "") + " " + color;
  result.dataset.result = r.result;
  verdict.textContent = text;
  const parts = [];
  if (r.seat && r.seat.label) parts.push(r.seat.label);
  if (r.category) parts.push(r.category);
  if (r.holder) parts.push(r.holder);
  if (r.result === "already_admitted" && r.at) {
    parts.push("at " + new Date(r.at).toLocaleTimeString() + (r.entrance ? ", " + r.entrance : ""));
  }
  if (r.offline) parts.push("(decided offline)");
  if (r.message) parts.push(r.message);
  detail.textContent = parts.join(" · ");
  result.hidden = false;
  clearTimeout(hideTimer);
  hideTimer = setTimeout(() => (result.hidden = true), 2500);
  status();
}

async function check(code) {
  if (!code.trim()) return;
  show(await scanner.scan(code));
}

form.addEventListener("submit", (e) => {
  e.preventDefault();
  const code = input.value;
  input.value = "";
  check(code);
});
result.addEventListener("click", () => {
  result.hidden = true;
  input.focus();
});
window.addEventListener("online", status);
window.addEventListener("offline", status);

try {
  await scanner.refresh();
} catch {
  // Offline at load: the key and lists stored by an earlier visit serve.
}
scanner.start();
status();

if ("BarcodeDetector" in window) {
  const button = document.getElementById("scan-camera");
  const video = document.getElementById("scan-video");
  button.hidden = false;
  button.addEventListener("click", async () => {
    const detector = new BarcodeDetector({ formats: ["qr_code"] });
    video.srcObject = await navigator.mediaDevices.getUserMedia({ video: { facingMode: "environment" } });
    video.hidden = false;
    await video.play();
    let last = "";
    let lastAt = 0;
    const tick = async () => {
      try {
        const codes = await detector.detect(video);
        const code = codes.length ? codes[0].rawValue : "";
        // The same code held in front of the camera is one scan.
        if (code && (code !== last || Date.now() - lastAt > 3000)) {
          last = code;
          lastAt = Date.now();
          await check(code);
        }
      } catch {
        // A frame that cannot be read: the next one may.
      }
      setTimeout(tick, 250);
    };
    tick();
  });
}
