// Study controls on the review pages: U undoes the latest grade of today.
(function () {
  "use strict";
  var undo = document.getElementById("undo-button");
  if (!undo) return;
  var sent = false;
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select" || event.target.isContentEditable) return;
    if (event.key !== "u" && event.key !== "U") return;
    event.preventDefault();
    if (sent) return;
    sent = true;
    undo.click();
  });
})();
