// The review page: keys, and answers that survive a dropped connection.
//
// Keys: Space or Enter shows the answer, then 1 = Again, 2 = Good. Space and Enter act
// only when focus is not on a link, button or form field, which keep their own keys.
//
// Interview cards: an optional written answer before the model answer, sent with the
// grade (answer_text); the key points are ticked against it, and the grade button the
// count supports is marked "suggested" in its text. The learner still chooses.
//
// Offline queue (static/js/offline.js): a grade is stored in localStorage with a fresh
// Idempotency-Key before it is sent to POST /api/v1/reviews/. Sent, it leaves the queue;
// when the network fails it stays, the page moves on to the next due card it carries,
// and offline.js sends the queue again (on any page) until the server takes it. The
// server replays a repeated key instead of counting the answer twice. Loaded with
// answers waiting, the page sends them before it shows a card, so a card answered
// offline is never shown again.
(function () {
  "use strict";
  var article = document.getElementById("review-card");
  var details = document.getElementById("review-answer");
  var form = document.getElementById("grade-form");
  if (!article || !details || !form) return;

  var FLASH = "study.review-flash";
  var queue = window.studyOffline;
  var root = document.documentElement;
  var offlineCopy = root.hasAttribute("data-offline-copy");  // served by the service worker
  var statusBox = document.getElementById("offline-status");
  var flashBox = document.getElementById("review-flash");
  var submitted = false;
  var offlineMode = false;  // showing a card carried by the page, not one the server sent

  // --- Keys ------------------------------------------------------------------------

  // Space and Enter activate links, buttons and summaries: leave them those keys.
  function ownsActivationKeys(target) {
    if (!target || !target.closest) return false;
    if (target.isContentEditable) return true;
    return Boolean(target.closest("a, button, input, select, textarea, summary, [role=button]"));
  }

  // Digits grade only from the page itself, the grade buttons (where focus lands once
  // the answer shows) or the key points' boxes, never from a link, another button or a
  // form field such as the written answer.
  function ownsDigitKeys(target) {
    return ownsActivationKeys(target) && !target.closest("#grade-form button, #points-list input");
  }

  // Once the answer shows, focus goes to the first key point to tick, else to Good.
  function firstAfterReveal() {
    var point = checklist && !checklist.hidden ? checklist.querySelector("input") : null;
    return point || document.getElementById("grade-good");
  }

  function reveal() {
    details.open = true;
    firstAfterReveal().focus();
  }

  function onKey(event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (!details.open) {
      if ((event.key === " " || event.key === "Enter") && !ownsActivationKeys(event.target)) {
        event.preventDefault();
        reveal();
      }
      return;
    }
    if (ownsDigitKeys(event.target)) return;
    if (event.key === "1") { event.preventDefault(); gradeWith("grade-again"); }
    else if (event.key === "2") { event.preventDefault(); gradeWith("grade-good"); }
  }

  function gradeWith(id) {
    if (!submitted) document.getElementById(id).click();
  }

  // --- Interview cards: the written answer, the key points, the suggested grade ----------

  var interview = document.getElementById("interview-answer");
  var answerBox = document.getElementById("answer-text");
  var checklist = document.getElementById("points-checklist");
  var tally = document.getElementById("points-tally");
  var tallyHint = tally ? tally.textContent : "";

  function writtenAnswer() {
    if (!interview || interview.hidden || !answerBox) return "";
    return answerBox.value.trim();
  }

  function markSuggested(id, on) {
    var button = document.getElementById(id);
    var label = button ? button.querySelector(".suggestion") : null;
    if (!label) return;
    label.hidden = !on;
    button.classList.toggle("suggested", on);
  }

  // More than half of the key points ticked suggests Good, otherwise Again.
  function suggest() {
    var boxes = checklist.querySelectorAll("#points-list input[type=checkbox]");
    var ticked = Array.prototype.filter.call(boxes, function (box) { return box.checked; }).length;
    var pass = ticked * 2 > boxes.length;
    markSuggested("grade-good", pass);
    markSuggested("grade-again", !pass);
    tally.textContent = ticked + " of " + boxes.length + " key point" + (boxes.length === 1 ? "" : "s") +
      " covered: " + (pass ? "Good" : "Again") + " is suggested. The grade is yours to choose.";
  }

  function clearSuggestion() {
    markSuggested("grade-good", false);
    markSuggested("grade-again", false);
    if (tally) tally.textContent = tallyHint;
  }

  // A card carried for offline use: the written answer box and the key points follow its kind.
  function showInterview(node) {
    if (!interview || !checklist) return;
    var isInterview = node.getAttribute("data-kind") === "interview";
    interview.hidden = !isInterview;
    if (answerBox) answerBox.value = "";
    var list = document.getElementById("points-list");
    list.textContent = "";
    var points = isInterview ? node.querySelectorAll("[data-face=points] li") : [];
    Array.prototype.forEach.call(points, function (point, index) {
      var label = document.createElement("label");
      label.className = "point";
      var box = document.createElement("input");
      box.type = "checkbox";
      box.name = "point";
      box.value = String(index);
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + point.textContent));
      list.appendChild(label);
    });
    checklist.hidden = !points.length;
    clearSuggestion();
  }

  // --- Offline queue (static/js/offline.js keeps and sends it) ----------------------

  function myQueue() {
    return queue ? queue.mine() : [];
  }

  // Answered already: waiting in the queue, or (on a copy of the page kept for offline
  // use, saved before) sent from it lately.
  function answered(card) {
    var id = String(card);
    if (myQueue().some(function (item) { return String(item.card) === id; })) return true;
    return offlineCopy && queue.sentLately().indexOf(id) !== -1;
  }

  function showStatus() {
    if (!statusBox) return;
    var waiting = myQueue().length;
    if (!waiting) {
      statusBox.textContent = offlineMode ? "All answers given offline have been sent." : "";
      statusBox.hidden = !offlineMode;
      return;
    }
    statusBox.hidden = false;
    statusBox.textContent = (waiting === 1 ? "1 answer is" : waiting + " answers are") +
      " waiting to be sent. They go out by themselves when the connection returns.";
  }

  // --- Moving on without the server --------------------------------------------------

  function carriedCards() {
    var template = document.getElementById("offline-cards");
    if (!template) return [];
    return Array.prototype.filter.call(template.content.querySelectorAll("[data-card]"), function (node) {
      var id = node.getAttribute("data-card");
      return !answered(id) && id !== article.getAttribute("data-card");
    });
  }

  // The counter as the page was rendered, and the cards it carries (the one shown first).
  // A card shown instead of the first is counted from there: the page's position plus the
  // page's cards answered since it was rendered (waiting, sent lately or graded here), so
  // a kept copy reloaded offline counts the same as the page it replaced.
  var progressLabel = document.getElementById("review-progress");
  var progressBar = document.querySelector("progress");
  var rendered = /^Card (\d+) of (\d+)$/.exec(progressLabel ? progressLabel.textContent.trim() : "");
  var renderedDone = progressBar ? Number(progressBar.value) : 0;
  var carriedTemplate = document.getElementById("offline-cards");
  var pageCards = [article.getAttribute("data-card")].concat(carriedTemplate
    ? Array.prototype.map.call(carriedTemplate.content.querySelectorAll("[data-card]"), function (node) {
      return node.getAttribute("data-card");
    })
    : []);
  var gradedHere = {};

  function advanceProgress() {
    var offset = pageCards.filter(function (id) { return gradedHere[id] || answered(id); }).length;
    if (progressBar) progressBar.value = Math.min(renderedDone + offset, Number(progressBar.max) || Infinity);
    if (rendered && progressLabel) {
      var total = Number(rendered[2]);
      progressLabel.textContent = "Card " + Math.min(Number(rendered[1]) + offset, total) + " of " + total;
    }
  }

  // The card's lesson section, linked with the answer; hidden for a card without one.
  function showLessonLink(url) {
    var box = document.getElementById("lesson-link");
    if (!box) return;
    box.hidden = !url;
    box.querySelector("a").setAttribute("href", url || "");
  }

  function showCarried(node, keepFocus) {
    showInterview(node);
    showLessonLink(node.getAttribute("data-lesson"));
    article.setAttribute("data-card", node.getAttribute("data-card"));
    form.querySelector("input[name=card]").value = node.getAttribute("data-card");
    document.getElementById("card-prompt-label").textContent = node.getAttribute("data-label");
    replaceChildren(document.getElementById("card-prompt"), node.querySelector("[data-face=prompt]"));
    replaceChildren(document.getElementById("card-answer"), node.querySelector("[data-face=answer]"));
    details.open = false;
    submitted = false;
    advanceProgress();
    window.dispatchEvent(new CustomEvent("study:card", {
      detail: { card: Number(node.getAttribute("data-card")), carried: true }
    }));
    if (!keepFocus) document.getElementById("show-answer").focus();
  }

  function replaceChildren(target, source) {
    target.textContent = "";
    Array.prototype.forEach.call(source.childNodes, function (child) {
      target.appendChild(document.importNode(child, true));
    });
  }

  function outOfCarriedCards() {
    details.open = false;
    details.hidden = true;
    document.getElementById("card-prompt").textContent =
      "No more cards can be shown offline. Reconnect to go on; your answers are kept.";
    document.getElementById("card-prompt-label").textContent = "Offline";
    window.dispatchEvent(new CustomEvent("study:card", { detail: { card: null, carried: true } }));
    // Once everything waiting has been sent (by the timer, the "online" event or a
    // grade in another tab), the server has the next cards.
    window.addEventListener("study:queue", function reloadWhenSent(event) {
      if (event.detail.waiting || !event.detail.sent) return;
      window.removeEventListener("study:queue", reloadWhenSent);
      window.location.assign(window.location.pathname);
    });
  }

  function flash(text) {
    try { window.sessionStorage.setItem(FLASH, text); } catch (e) { /* private mode */ }
  }

  function showFlash() {
    var text = null;
    try {
      text = window.sessionStorage.getItem(FLASH);
      window.sessionStorage.removeItem(FLASH);
    } catch (e) { /* private mode */ }
    if (text && flashBox) {
      var ul = document.createElement("ul");
      ul.className = "messages";
      var li = document.createElement("li");
      li.className = "success";
      li.textContent = text;
      ul.appendChild(li);
      flashBox.appendChild(ul);
    }
  }

  function grade(result) {
    if (submitted) return;
    submitted = true;  // one review per card, even on a repeated key press
    gradedHere[article.getAttribute("data-card")] = true;
    var entry = { card: Number(article.getAttribute("data-card")), result: result };
    var written = writtenAnswer();
    if (written) entry.answer_text = written;
    var item = queue.enqueue(entry);
    queue.flush().then(function (outcome) {
      var answer = outcome.answers[item.key];
      // Sent by another tab meanwhile: it left the queue, and the server has it.
      if (!answer && !queue.mine().some(function (other) { return other.key === item.key; })) {
        answer = { status: null, body: null, final: true };
      }
      if (!answer || !answer.final) {
        // Not sent (offline, or the server cannot take it now): it waits, and the
        // page goes on with the cards it carries.
        offlineMode = true;
        showStatus();
        var next = carriedCards()[0];
        if (next) showCarried(next); else outOfCarriedCards();
        return;
      }
      if (answer.status === 201 && answer.body) {
        var days = answer.body.interval_days;
        flash((result === "pass" ? "Good" : "Again") + ": next review in " + days + " day" + (days === 1 ? "" : "s") + ".");
      }
      if (offlineMode) {
        // Back online in the middle of carried cards: go on with them.
        showStatus();
        var following = carriedCards()[0];
        if (following) showCarried(following); else window.location.assign(window.location.pathname);
        return;
      }
      window.location.assign(window.location.pathname);
    });
  }

  // On load with answers waiting: send them before showing a card. Once any is sent the
  // page the server rendered is out of date, so it is loaded again; when none can be
  // sent, the page goes on offline past the cards already answered.
  function settle() {
    if (!myQueue().length && !(offlineCopy && answered(article.getAttribute("data-card")))) {
      root.removeAttribute("data-queue");
      return;
    }
    if (statusBox) {
      statusBox.hidden = false;
      statusBox.textContent = "Sending the answers given offline\u2026";
    }
    queue.flush().then(function (outcome) {
      if (outcome.sent && !outcome.waiting) {
        window.location.replace(window.location.pathname);
        return;
      }
      if (outcome.waiting || offlineCopy) offlineMode = true;
      if (answered(article.getAttribute("data-card"))) {
        var next = carriedCards()[0];
        if (next) showCarried(next, true); else outOfCarriedCards();
      }
      showStatus();
      root.removeAttribute("data-queue");
    });
  }

  form.addEventListener("submit", function (event) {
    if (!window.fetch || !window.localStorage || !queue) return;  // the plain form post still works
    event.preventDefault();
    var button = event.submitter;
    if (button && button.name === "result") grade(button.value);
  });

  document.addEventListener("keydown", onKey);
  details.addEventListener("toggle", function () {
    if (details.open && document.activeElement === document.getElementById("show-answer")) {
      firstAfterReveal().focus();
    }
  });
  window.addEventListener("study:queue", showStatus);
  if (checklist) checklist.addEventListener("change", suggest);
  window.addEventListener("offline", showStatus);
  showFlash();
  if (queue) settle(); else root.removeAttribute("data-queue");
})();
