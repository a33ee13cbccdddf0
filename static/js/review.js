// Keyboard review: Space or Enter shows the answer, then 1 = Again, 2 = Good.
(function () {
  "use strict";
  var details = document.getElementById("review-answer");
  if (!details) return;
  var again = document.getElementById("grade-again");
  var good = document.getElementById("grade-good");
  var submitted = false;

  function reveal() {
    details.open = true;
    good.focus();
  }

  function grade(button) {
    if (submitted) return;
    submitted = true;  // one review per card, even on a repeated key press
    button.click();
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select") return;
    if (!details.open) {
      if (event.key === " " || event.key === "Enter") {
        event.preventDefault();
        reveal();
      }
      return;
    }
    if (event.key === "1") { event.preventDefault(); grade(again); }
    else if (event.key === "2") { event.preventDefault(); grade(good); }
  });

  details.addEventListener("toggle", function () {
    if (details.open && document.activeElement === document.getElementById("show-answer")) good.focus();
  });
})();
