// Study controls on the review pages: U undoes the latest grade of today; undo, bury,
// suspend and report wait for the server while it cannot be reached.
//
// Offline these controls are switched off with a message (in a live region) rather than
// queued like grades: undo and bury act on the study day they are made on (an undo only
// on the day of the grade, a bury until the next day), so sent later they would do
// something else or be refused, and none of them can show its result without the
// server. A report's text stays in its box, to be sent once the connection returns.
// Before a control's form is posted the server is asked whether it answers, so a
// dropped connection never lands on the browser's error page.
(function () {
  "use strict";
  var offline = window.studyOffline;
  var undo = document.getElementById("undo-button");
  var undoForm = document.getElementById("undo-form");
  var controls = document.getElementById("card-controls");
  var leech = document.getElementById("leech-warning");
  var report = document.getElementById("report");
  var reportForm = document.getElementById("report-form");
  var status = document.getElementById("controls-status");
  var OFFLINE_TEXT = "You are offline. Undo, bury, suspend and sending a report need the server: " +
    "they come back when the connection returns. A report you write stays in its box.";
  var ONLINE_TEXT = "Back online: undo, bury, suspend and reports work again.";

  var forms = Array.prototype.slice.call(
    document.querySelectorAll("#undo-form, #card-controls form, #leech-warning form, #report-form")
  );
  if (!forms.length) return;
  var wasOffline = false;
  var posting = false;
  var undoSent = false;

  if (!status) {
    // The page without card controls (all done) keeps its live region under Undo.
    status = document.createElement("p");
    status.id = "controls-status";
    status.className = "offline-status card-controls-offline";
    status.setAttribute("role", "status");
    (undoForm || forms[0]).insertAdjacentElement("afterend", status);
  }

  function buttons() {
    return forms.map(function (form) { return form.querySelector("button[type=submit], button:not([type])"); })
      .filter(Boolean);
  }

  function setOffline(isOffline) {
    buttons().forEach(function (button) { button.disabled = isOffline; });
    if (isOffline) {
      status.textContent = OFFLINE_TEXT;
    } else if (wasOffline) {
      status.textContent = ONLINE_TEXT;
    }
    wasOffline = isOffline;
  }

  function reachable() {
    return offline ? offline.reachable() : true;
  }

  // Posts the form once the server has answered a probe; otherwise says why not.
  function guard(event) {
    var form = event.currentTarget;
    if (!offline || !window.fetch) return;  // the plain post
    event.preventDefault();
    if (posting) return;
    if (!reachable()) {
      setOffline(true);
      undoSent = false;
      return;
    }
    posting = true;
    offline.probe().then(function (answers) {
      if (answers) {
        form.submit();  // the native post: no submit event, so no second probe
        return;
      }
      posting = false;
      undoSent = false;
      setOffline(true);
    });
  }

  forms.forEach(function (form) { form.addEventListener("submit", guard); });

  // The review page went on offline with a card it carries: the controls act on that
  // card now. The server's latest grade is no longer the last one given, so Undo goes.
  window.addEventListener("study:card", function (event) {
    var card = event.detail.card;
    if (undoForm) undoForm.hidden = true;
    if (leech) leech.hidden = true;
    if (card === null) {
      if (controls) controls.hidden = true;
      if (report) report.hidden = true;
      return;
    }
    if (controls) {
      Array.prototype.forEach.call(controls.querySelectorAll("form"), function (form) {
        form.setAttribute("action", form.getAttribute("action").replace(/\/cards\/\d+\//, "/cards/" + card + "/"));
      });
    }
    if (reportForm) {
      reportForm.reset();  // a report written about the card before is not about this one
      var field = reportForm.querySelector("input[name=card]");
      if (field) field.value = String(card);
    }
  });

  window.addEventListener("study:connectivity", function (event) { setOffline(!event.detail.reachable); });
  window.addEventListener("offline", function () { setOffline(true); });
  // offline.js asks the server on "online"; its answer arrives as study:connectivity.
  if (!reachable()) setOffline(true);

  if (!undo) return;
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select" || event.target.isContentEditable) return;
    if (event.key !== "u" && event.key !== "U") return;
    event.preventDefault();
    if (undoSent || undo.disabled || (undoForm && undoForm.hidden)) return;
    undoSent = true;
    undo.click();
  });
})();
