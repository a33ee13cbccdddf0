// Exercise pages: after a submission the page loads with its result summary (or the list
// of cells that were not numbers); focus moves there so it is read out and seen first.
(function () {
  "use strict";
  var target = document.getElementById("answer-problems") || document.getElementById("exercise-feedback");
  if (!target) return;
  if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
  target.focus();
})();
