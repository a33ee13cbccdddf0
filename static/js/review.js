// The review page: keys, and answers that survive a dropped connection.
//
// Keys: Space or Enter shows the answer, then 1 = Again, 2 = Good. Space and Enter act
// only when focus is not on a link, button or form field, which keep their own keys.
//
// Interview cards: an optional written answer before the model answer, sent with the
// grade (answer_text); the key points are ticked against it, and the grade button the
// count supports is marked "suggested" in its text. The learner still chooses.
//
// Offline queue: a grade is stored in localStorage with a fresh Idempotency-Key before it
// is sent to POST /api/v1/reviews/. Sent, it leaves the queue; when the network fails it
// stays, the page moves on to the next due card it carries, and the queue is sent again
// when the connection returns. The server replays a repeated key instead of counting
// the answer twice.
(function () {
  "use strict";
  var article = document.getElementById("review-card");
  var details = document.getElementById("review-answer");
  var form = document.getElementById("grade-form");
  if (!article || !details || !form) return;

  var API = "/api/v1/reviews/";
  var STORE = "study.review-queue.v1";
  var FLASH = "study.review-flash";
  var learner = article.getAttribute("data-learner") || "";
  var statusBox = document.getElementById("offline-status");
  var flashBox = document.getElementById("review-flash");
  var submitted = false;
  var offlineMode = false;  // showing a card carried by the page, not one the server sent
  var flushing = false;

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

  // What POST /api/v1/reviews/ receives for a queued answer.
  function reviewBody(item) {
    var body = { card: item.card, result: item.result };
    if (item.answer_text) body.answer_text = item.answer_text;
    return body;
  }

  // --- Offline queue ---------------------------------------------------------------

  function readQueue() {
    try {
      var items = JSON.parse(window.localStorage.getItem(STORE) || "[]");
      return Array.isArray(items) ? items : [];
    } catch (e) {
      return [];
    }
  }

  function writeQueue(items) {
    try { window.localStorage.setItem(STORE, JSON.stringify(items)); } catch (e) { /* full or blocked */ }
  }

  function myQueue() {
    return readQueue().filter(function (item) { return item.learner === learner; });
  }

  function enqueue(item) {
    var items = readQueue();
    items.push(item);
    writeQueue(items);
  }

  function dequeue(key) {
    writeQueue(readQueue().filter(function (item) { return item.key !== key; }));
  }

  function newKey() {
    if (window.crypto && window.crypto.randomUUID) return window.crypto.randomUUID();
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
  }

  function csrfToken() {
    var input = form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  // Resolves to the HTTP status, or to null when the network failed (the item stays queued).
  function send(item) {
    return fetch(API, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "X-CSRFToken": csrfToken(),
        "Idempotency-Key": item.key
      },
      body: JSON.stringify(reviewBody(item))
    }).then(function (response) {
      // 201 recorded (or replayed); other 4xx answers will not change on a retry
      // (already reviewed, left the queue). Server errors and throttling are retried.
      var final = response.status < 500 && response.status !== 429;
      if (final) dequeue(item.key);
      return response.json().catch(function () { return null; }).then(function (body) {
        return { status: final ? response.status : null, body: body };
      });
    }).catch(function () {
      return { status: null, body: null };
    });
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

  function flush() {
    if (flushing) return Promise.resolve();
    var items = myQueue();
    if (!items.length) { showStatus(); return Promise.resolve(); }
    flushing = true;
    var chain = Promise.resolve(true);
    items.forEach(function (item) {
      chain = chain.then(function (ok) {
        if (!ok) return false;  // still offline: keep the rest for the next try
        return send(item).then(function (answer) { return answer.status !== null; });
      });
    });
    return chain.then(function () {
      flushing = false;
      showStatus();
    });
  }

  // --- Moving on without the server --------------------------------------------------

  function carriedCards() {
    var template = document.getElementById("offline-cards");
    if (!template) return [];
    var queued = {};
    myQueue().forEach(function (item) { queued[String(item.card)] = true; });
    return Array.prototype.filter.call(template.content.querySelectorAll("[data-card]"), function (node) {
      return !queued[node.getAttribute("data-card")] && node.getAttribute("data-card") !== article.getAttribute("data-card");
    });
  }

  function advanceProgress() {
    var progress = document.querySelector("progress");
    var label = document.getElementById("review-progress");
    if (progress) progress.value = Number(progress.value) + 1;
    if (label) {
      var match = /^Card (\d+) of (\d+)$/.exec(label.textContent.trim());
      if (match) label.textContent = "Card " + (Number(match[1]) + 1) + " of " + match[2];
    }
  }

  function showCarried(node) {
    showInterview(node);
    article.setAttribute("data-card", node.getAttribute("data-card"));
    form.querySelector("input[name=card]").value = node.getAttribute("data-card");
    document.getElementById("card-prompt-label").textContent = node.getAttribute("data-label");
    replaceChildren(document.getElementById("card-prompt"), node.querySelector("[data-face=prompt]"));
    replaceChildren(document.getElementById("card-answer"), node.querySelector("[data-face=answer]"));
    details.open = false;
    submitted = false;
    advanceProgress();
    document.getElementById("show-answer").focus();
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
    window.addEventListener("online", function () {
      flush().then(function () { window.location.assign(window.location.pathname); });
    }, { once: true });
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
    var item = {
      key: newKey(),
      card: Number(article.getAttribute("data-card")),
      result: result,
      learner: learner,
      at: new Date().toISOString()
    };
    var written = writtenAnswer();
    if (written) item.answer_text = written;
    enqueue(item);
    send(item).then(function (answer) {
      if (answer.status === null) {
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
        // Back online in the middle of carried cards: send what waits, then go on.
        flush().then(function () {
          var next = carriedCards()[0];
          if (next) showCarried(next); else window.location.assign(window.location.pathname);
        });
        return;
      }
      flush().then(function () { window.location.assign(window.location.pathname); });
    });
  }

  form.addEventListener("submit", function (event) {
    if (!window.fetch || !window.localStorage) return;  // the plain form post still works
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
  if (checklist) checklist.addEventListener("change", suggest);
  window.addEventListener("online", function () { flush(); });
  window.addEventListener("offline", showStatus);
  showFlash();
  flush();
})();
