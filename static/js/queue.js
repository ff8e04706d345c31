// The waiting room page (views/queue.templ): asks the queue API again at
// the interval it says (spread at random by the server, so a big line's
// pollers do not arrive together), shows the place, those ahead and the
// expected wait, and goes to the map once admitted. No socket: a waiting
// visitor costs the server nothing between two polls.
(function () {
	"use strict";
	const root = document.querySelector("[data-queue-event]");
	if (!root) return;
	const event = root.dataset.queueEvent;
	const $ = (sel) => root.querySelector(sel);
	const paused = $("[data-queue-paused]");

	function words(s) {
		if (s == null) return "unknown yet";
		if (s < 60) return "less than a minute";
		const m = Math.round(s / 60);
		if (m < 60) return "about " + m + (m === 1 ? " minute" : " minutes");
		const h = Math.floor(m / 60), r = m % 60;
		return "about " + h + " h " + (r ? r + " min" : "");
	}

	function show(q) {
		if (q.admitted) {
			window.location.assign(q.map_url);
			return;
		}
		root.querySelectorAll("[data-queue-when]").forEach((el) => {
			el.hidden = el.dataset.queueWhen !== q.state;
		});
		$("[data-queue-position]").textContent = String(q.position);
		$("[data-queue-ahead]").textContent = String(q.ahead);
		$("[data-queue-inline]").textContent = String(q.in_line);
		$("[data-queue-eta]").textContent = words(q.eta_seconds);
		paused.hidden = true;
	}

	async function poll() {
		let after = 10;
		try {
			const res = await fetch("/api/v1/events/" + event + "/queue", {
				method: "POST",
				credentials: "same-origin",
				headers: { "Accept": "application/json" },
			});
			const body = await res.json().catch(() => ({}));
			if (res.ok) {
				show(body);
				after = body.poll_after_seconds || after;
			} else {
				paused.textContent = body.message || "The waiting room cannot be reached right now; your place is kept.";
				paused.hidden = false;
				after = Number(res.headers.get("Retry-After")) || after;
			}
		} catch (e) {
			paused.textContent = "You seem to be offline; your place is kept.";
			paused.hidden = false;
		}
		// A little spread of our own on top of the server's.
		setTimeout(poll, after * 1000 * (0.9 + Math.random() * 0.2));
	}

	setTimeout(poll, (Number(root.dataset.pollAfter) || 5) * 1000);
})();
