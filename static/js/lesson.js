// The lesson page: a table, formula or code block wider than its section scrolls sideways
// in its own box. While it overflows, a box with nothing focusable inside is made a named,
// focusable region, so it can be scrolled from the keyboard too (as on the exercise pages).
(function () {
  "use strict";
  function label(box) {
    var caption = box.querySelector("caption");
    if (caption) return caption.textContent + ": scrolls sideways";
    return (box.tagName === "PRE" ? "Code" : "Formula") + ": scrolls sideways";
  }
  function sync() {
    document.querySelectorAll(".lesson .scroll-x, .lesson pre").forEach(function (box) {
      if (box.querySelector("input, button, select, a[href]")) return;
      if (box.scrollWidth > box.clientWidth) {
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", label(box));
      } else {
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
      }
    });
  }
  window.addEventListener("resize", sync);
  sync();
})();
