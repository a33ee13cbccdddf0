// Exercise pages: after a submission the page loads with its result summary (or the list
// of cells that were not numbers); focus moves there so it is read out and seen first.
(function () {
  "use strict";
  var target = document.getElementById("answer-problems") || document.getElementById("exercise-feedback");
  if (!target) return;
  if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
  target.focus();
})();

// A table wider than its panel scrolls sideways. One with no field inside is made a named,
// focusable region while it overflows, so it can be scrolled from the keyboard too.
(function () {
  "use strict";
  function sync() {
    document.querySelectorAll(".scroll-x").forEach(function (box) {
      if (box.querySelector("input, button, select, a[href]")) return;
      var overflows = box.scrollWidth > box.clientWidth + 1;
      var caption = box.querySelector("caption");
      if (overflows) {
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", (caption ? caption.textContent + ": " : "") + "scrolls sideways");
      } else {
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
      }
    });
  }
  window.studyScrollers = sync;
  window.addEventListener("resize", sync);
  sync();
})();
