// Pays a seatd payment with Stripe's Payment Element: mounts it with the
// publishable key and the PaymentIntent's client secret the server put on
// the form, confirms on submit, and lets Stripe send the buyer back to the
// payment's page, which waits for Stripe's webhook to make the booking.
(function () {
  "use strict";
  function start() {
    var form = document.getElementById("stripe-pay");
    if (!form || typeof Stripe !== "function") {
      return;
    }
    var stripe = Stripe(form.dataset.key);
    var elements = stripe.elements({ clientSecret: form.dataset.secret });
    elements.create("payment").mount("#payment-element");
    var errorBox = document.getElementById("stripe-error");
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var button = form.querySelector("button[type=submit]");
      button.disabled = true;
      errorBox.textContent = "";
      stripe.confirmPayment({
        elements: elements,
        confirmParams: { return_url: new URL(form.dataset.return, window.location.href).href },
      }).then(function (result) {
        // Only an immediate error comes back here; success redirects.
        if (result.error) {
          errorBox.textContent = result.error.message || "The payment did not go through.";
          button.disabled = false;
        }
      });
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
