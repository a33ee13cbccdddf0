// The admin's filter boxes (filter_horizontal, SelectFilter2.js) draw a help icon as a
// <span aria-label="...">: a name on an element with no role, which assistive technology
// ignores and WCAG checks refuse. Such an icon is an image with that name, so it gets
// role="img", as it is drawn (the widget builds itself on the page's load event).
(function () {
  "use strict";
  function name(root) {
    root.querySelectorAll("span.help-tooltip[aria-label]:not([role])").forEach(function (icon) {
      icon.setAttribute("role", "img");
    });
  }
  new MutationObserver(function (changes) {
    changes.forEach(function (change) {
      change.addedNodes.forEach(function (node) {
        if (node.nodeType === 1) name(node.parentNode || node);
      });
    });
  }).observe(document.documentElement, { childList: true, subtree: true });
  document.addEventListener("DOMContentLoaded", function () { name(document); });
})();
