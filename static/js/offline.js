// Answers given offline, on every page: the queue, its sending, the nav badge and the
// service worker that keeps the review page, its styles and scripts for offline use.
//
// The queue lives in localStorage ("study.review-queue.v1"): each item is one grade,
// {key, card, result, learner, at}, stored with a fresh Idempotency-Key before it is
// first sent to POST /api/v1/reviews/. The server replays a repeated key instead of
// counting the answer twice, so an item may be sent as often as needed and counts once.
//
// The queue is per learner: "learner" is the opaque key the page names (html[data-learner],
// studyapp/cache_control.py), never an id or an e-mail. A page sends only its learner's
// answers, and only while the browser's learner cookie names the same learner (a tab left
// open from an earlier session never sends under the account signed in since). A page
// that finds another learner signed in drops the answers of anyone else; signing out sends
// what waits, then drops the learner's answers and the pages kept for them. A page with no
// one signed in keeps the queue: a session that expired offline is signed into again.
//
// The queue is sent on every page load, on the browser's "online" event, when a tab
// comes back into view, and on a timer while anything waits: navigator.onLine and the
// "online" event say nothing about whether the server answers (on a machine whose only
// network is loopback the event never fires), so the timer retries whatever the browser
// says, backing off from 2 s to a minute. Sends from several tabs are serialised with a
// Web Lock where the browser has them.
//
// This file loads in <head> without defer: it marks the page (html[data-queue=pending])
// before the body is drawn, so the review page can hide its card until the queue is
// settled (a card answered offline is never shown again).

// Keyboard hints ("press 1 / 2") show only where a keyboard is at hand: a fine pointer
// that hovers (static/css/site.css), or once a key is pressed outside a text field on any
// page (html[data-keyboard], remembered for the tab), so a touch phone never shows them.
(function () {
  "use strict";
  var KEY = "study.keyboard";
  var root = document.documentElement;
  try {
    if (window.sessionStorage.getItem(KEY)) root.setAttribute("data-keyboard", "");
  } catch (e) { /* storage blocked: the media query alone decides */ }
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (root.hasAttribute("data-keyboard")) return;
    // A virtual keyboard typing into a field is no sign of a physical one.
    if (target && target.closest && (target.isContentEditable || target.closest("input, textarea, select"))) return;
    if (event.key === "Unidentified" || event.key === "Process") return;
    root.setAttribute("data-keyboard", "");
    try { window.sessionStorage.setItem(KEY, "1"); } catch (e) { /* storage blocked */ }
  }, true);
})();

(function () {
  "use strict";
  var STORE = "study.review-queue.v1";
  var API = "/api/v1/reviews/";
  var DUE = "/api/v1/reviews/due/?page_size=1";
  var PROBE = "/healthz";
  var TIMEOUT_MS = 10000;
  var RETRY_FIRST_MS = 2000;
  var RETRY_MAX_MS = 60000;
  // Fields of a queued item that go into the request body.
  var PAYLOAD = ["card", "result", "answer_text"];

  // The cookie that names the learner of the browser's session (studyapp/cache_control.py).
  var LEARNER_COOKIE = "study_learner";

  var root = document.documentElement;
  var learner = root.getAttribute("data-learner") || "";
  // navigator.onLine is no guide (false for ever on a machine whose only network is
  // loopback): the server is taken to answer until a request fails, except on a copy of a
  // page that the service worker served because the network had failed.
  var reachable = !root.hasAttribute("data-offline-copy");
  var retryDelay = RETRY_FIRST_MS;
  var retryTimer = null;
  var tail = Promise.resolve();
  var pendingRun = null;
  var started = false;  // a send was asked for on this page
  // Every answer the server gave this page, by item key. A run that starts after an item
  // was queued may send it on behalf of a later flush() (the lock is granted later than
  // it is asked for), so each run reports all of them, not only its own.
  var answers = {};

  // --- The stored queue ------------------------------------------------------------

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

  // Only the signed-in learner's answers.
  function mine() {
    if (!learner) return [];
    return readQueue().filter(function (item) { return String(item.learner) === learner; });
  }

  // The learner the browser's session belongs to now ("" for no one).
  function cookieLearner() {
    var match = new RegExp("(?:^|;\\s*)" + LEARNER_COOKIE + "=([^;]*)").exec(document.cookie);
    return match ? decodeURIComponent(match[1]) : "";
  }

  // Whether this page's learner is still the browser's: another may have signed in since.
  function current() {
    return Boolean(learner) && cookieLearner() === learner;
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

  // A new item for this learner, stored before anything is sent.
  function enqueue(fields) {
    var item = { key: newKey(), learner: learner, at: new Date().toISOString() };
    Object.keys(fields).forEach(function (name) { item[name] = fields[name]; });
    var items = readQueue();
    items.push(item);
    writeQueue(items);
    lowerBadge();
    return item;
  }

  // Cards whose answers left the queue lately: a page kept for offline use may still
  // show one of them (it was saved before they were answered).
  var SENT = "study.review-sent.v1";
  var SENT_KEEP_MS = 36 * 3600 * 1000;
  // A page the server counted while another page was still sending shows the count from
  // before those answers: answers sent this lately make a page ask for the count again.
  var RECOUNT_MS = 30000;

  function remember(item) {
    var now = Date.now();
    var sent = [];
    try { sent = JSON.parse(window.localStorage.getItem(SENT) || "[]"); } catch (e) { sent = []; }
    if (!Array.isArray(sent)) sent = [];
    sent = sent.filter(function (entry) { return now - entry.t < SENT_KEEP_MS; }).slice(-499);
    sent.push({ learner: item.learner, card: item.card, t: now });
    try { window.localStorage.setItem(SENT, JSON.stringify(sent)); } catch (e) { /* full or blocked */ }
  }

  // This learner's answers sent in the last ``ms`` milliseconds, by any page.
  function sentWithin(ms) {
    var now = Date.now();
    try {
      var sent = JSON.parse(window.localStorage.getItem(SENT) || "[]");
      return (Array.isArray(sent) ? sent : []).filter(function (entry) {
        return String(entry.learner) === learner && now - entry.t < ms;
      });
    } catch (e) {
      return [];
    }
  }

  function sentLately() {
    return sentWithin(SENT_KEEP_MS).map(function (entry) { return String(entry.card); });
  }

  // --- Sending ---------------------------------------------------------------------

  function csrfToken() {
    var input = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (input && input.value) return input.value;
    var match = /(?:^|;\s*)csrftoken=([^;]+)/.exec(document.cookie);
    return match ? decodeURIComponent(match[1]) : "";
  }

  // Requests this page has sent (and the browser's offline reports), in order, and the
  // latest of them whose outcome has been taken into account.
  var sentCount = 0;
  var heardOrder = 0;

  // The latest-started request decides reachability: an answer to an earlier one
  // that arrives after a later one failed says nothing about the server now.
  function heard(order, answered) {
    if (order < heardOrder) return;
    heardOrder = order;
    setReachable(answered);
  }

  // fetch with a deadline: a server that does not answer counts as a network failure.
  function request(url, options) {
    var order = ++sentCount;
    var controller = window.AbortController ? new AbortController() : null;
    var timer = controller ? window.setTimeout(function () { controller.abort(); }, TIMEOUT_MS) : null;
    var settings = { credentials: "same-origin", cache: "no-store" };
    Object.keys(options || {}).forEach(function (name) { settings[name] = options[name]; });
    if (controller) settings.signal = controller.signal;
    return fetch(url, settings).then(function (response) {
      window.clearTimeout(timer);
      heard(order, true);
      return response;
    }, function (error) {
      window.clearTimeout(timer);
      heard(order, false);
      throw error;
    });
  }

  // Resolves to {status, body, final}: final when the item left the queue (recorded,
  // replayed, or refused in a way a retry would not change); status null when the
  // network failed.
  function send(item) {
    var body = {};
    PAYLOAD.forEach(function (name) { if (item[name] !== undefined) body[name] = item[name]; });
    return request(API, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "X-CSRFToken": csrfToken(),
        "Idempotency-Key": item.key
      },
      body: JSON.stringify(body)
    }).then(function (response) {
      // 201 recorded (or replayed); 400, 404 and 409 will not change on a retry.
      // Server errors, throttling and a lost session or CSRF token (401, 403: a fresh
      // page load brings a new one) keep the answer for a later try.
      var status = response.status;
      var final = status < 500 && status !== 429 && status !== 401 && status !== 403;
      if (final) { dequeue(item.key); remember(item); }
      return response.json().catch(function () { return null; }).then(function (json) {
        return { status: status, body: json, final: final };
      });
    }, function () {
      return { status: null, body: null, final: false };
    });
  }

  function withLock(work) {
    if (navigator.locks && navigator.locks.request) {
      return navigator.locks.request("study.review-queue", work);
    }
    return work();
  }

  // Sends this learner's queue in order and stops at the first answer that must wait.
  // Nothing is sent once another learner (or no one) holds the browser's session.
  function sendAll() {
    if (!current()) {
      return Promise.resolve({ sent: 0, waiting: mine().length, answers: answers, stale: true });
    }
    var items = mine();
    var result = { sent: 0, waiting: items.length, answers: answers };
    var chain = Promise.resolve(true);
    items.forEach(function (item) {
      chain = chain.then(function (goOn) {
        if (!goOn) return false;
        // Another tab may have sent it meanwhile.
        if (!mine().some(function (other) { return other.key === item.key; })) return true;
        return send(item).then(function (answer) {
          answers[item.key] = answer;
          if (answer.final) result.sent += 1;
          return answer.final;
        });
      });
    });
    return chain.then(function () {
      result.waiting = mine().length;
      return result;
    });
  }

  // Sends what waits; calls made while a send runs are served by one more run after it.
  function flush() {
    started = true;
    if (pendingRun) return pendingRun;
    var run = tail.then(function () {
      pendingRun = null;
      return withLock(sendAll);
    }).then(settled, function () {
      return settled({ sent: 0, waiting: mine().length, answers: answers });
    });
    pendingRun = run;
    tail = run;
    return run;
  }

  function settled(result) {
    window.clearTimeout(retryTimer);
    retryTimer = null;
    if (result.waiting && !result.stale) {
      retryTimer = window.setTimeout(flush, retryDelay);
      retryDelay = Math.min(retryDelay * 2, RETRY_MAX_MS);
    } else {
      retryDelay = RETRY_FIRST_MS;
    }
    if (result.sent) refreshBadge();
    announce(result);
    return result;
  }

  // --- Reachability ----------------------------------------------------------------

  function setReachable(value) {
    if (value === reachable) return;
    reachable = value;
    window.dispatchEvent(new CustomEvent("study:connectivity", { detail: { reachable: value } }));
  }

  // Asks the server whether it answers; resolves to true or false.
  function probe() {
    return request(PROBE, { method: "GET" }).then(function () { return true; }, function () { return false; });
  }

  // --- The nav badge ---------------------------------------------------------------

  function badge() {
    return document.getElementById("nav-due");
  }

  function setBadge(count) {
    var node = badge();
    if (!node) return;
    node.textContent = String(count);
    node.setAttribute("aria-label", count + " due");
  }

  // An answer queued offline is one card fewer to do, whatever the server knows yet.
  function lowerBadge() {
    var node = badge();
    if (node) setBadge(Math.max(0, (parseInt(node.textContent, 10) || 0) - 1));
  }

  function refreshBadge() {
    if (!badge()) return Promise.resolve();
    return request(DUE, { headers: { "Accept": "application/json" } }).then(function (response) {
      return response.ok ? response.json() : null;
    }).then(function (page) {
      if (page && typeof page.count === "number") setBadge(page.count);
    }, function () { /* offline again: the badge waits for the next send */ });
  }

  // --- Telling the page ------------------------------------------------------------

  function announce(result) {
    window.dispatchEvent(new CustomEvent("study:queue", {
      detail: { waiting: mine().length, sent: result ? result.sent : 0 }
    }));
  }

  // --- Pages kept for offline use --------------------------------------------------

  function registerWorker() {
    if (!("serviceWorker" in navigator)) return;
    navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(function () {
      /* no offline pages in this browser; the queue still works */
    });
  }

  // Drops the pages the service worker keeps for anyone but the learner ``key`` ("": for
  // everyone); the styles and scripts stay. The worker does the same when a page from the
  // server names its learner; this covers a page it did not see (a reload that bypassed it).
  function keepPagesOf(key) {
    if (!window.caches) return Promise.resolve();
    return caches.keys().then(function (names) {
      return Promise.all(names.filter(function (name) {
        var at = name.indexOf("-learner-");
        return name.indexOf("study-") === 0 && at !== -1 && name.slice(at + 9) !== key;
      }).map(function (name) { return caches.delete(name); }));
    }).catch(function () { /* storage blocked */ });
  }

  // Drops what this browser keeps of anyone but the learner ``key`` ("": of everyone):
  // their waiting answers and the record of those sent.
  function keepAnswersOf(key) {
    var queue = readQueue();
    var kept = queue.filter(function (item) { return String(item.learner) === key; });
    if (kept.length !== queue.length) writeQueue(kept);
    try {
      var sent = JSON.parse(window.localStorage.getItem(SENT) || "[]");
      if (!Array.isArray(sent)) sent = [];
      var left = sent.filter(function (entry) { return String(entry.learner) === key; });
      if (left.length !== sent.length) window.localStorage.setItem(SENT, JSON.stringify(left));
    } catch (e) { /* storage blocked */ }
  }

  // A copy the worker kept for a learner whose session is over (it could not read the
  // cookie itself): stop drawing it, drop it, and ask the worker again.
  function refuseForeignCopy() {
    window.stop();
    root.setAttribute("data-foreign-copy", "1");
    var now = cookieLearner();
    keepPagesOf(now).then(function () {
      if (navigator.serviceWorker && navigator.serviceWorker.controller) window.location.reload();
    });
  }

  // Signing out: what waits is sent first (bounded by the send timeout), then this
  // learner's answers and kept pages are dropped and the form goes on. Offline, the form
  // goes on as before and keeps them: the learner is still signed in when it fails.
  function signOut(event) {
    var form = event.target;
    if (event.defaultPrevented || !learner) return;
    if (!form || !form.hasAttribute || !form.hasAttribute("data-logout")) return;
    event.preventDefault();
    var deadline = new Promise(function (done) { window.setTimeout(done, TIMEOUT_MS); });
    var sending = mine().length ? flush() : Promise.resolve();
    Promise.race([sending, deadline]).then(function () {
      if (reachable) {
        keepAnswersOf("");
        return keepPagesOf("");
      }
    }).then(function () { form.submit(); });
  }

  // A kept copy of another learner's page is never shown; a learner found signed in
  // drops what the browser kept of anyone else.
  var foreign = root.hasAttribute("data-offline-copy") && !current();
  if (foreign) refuseForeignCopy();
  else if (learner && current()) keepAnswersOf(learner);

  // Until the review page has settled the queue, its card may be one answered offline.
  if (mine().length) root.setAttribute("data-queue", "pending");

  window.studyOffline = {
    learner: learner,
    mine: mine,
    sentLately: sentLately,
    enqueue: enqueue,
    flush: flush,
    probe: probe,
    reachable: function () { return reachable; },
    refreshBadge: refreshBadge
  };

  window.addEventListener("online", function () {
    retryDelay = RETRY_FIRST_MS;
    if (mine().length) flush(); else probe();
  });
  // The browser's own report is newer than every request sent before it.
  window.addEventListener("offline", function () { heard(++sentCount, false); });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible" && mine().length) flush();
  });
  document.addEventListener("submit", signOut);
  document.addEventListener("DOMContentLoaded", function () {
    if (foreign) return;
    registerWorker();
    if (!root.hasAttribute("data-offline-copy")) keepPagesOf(learner);
    // A kept page's badge was counted before the answers that now wait.
    if (root.hasAttribute("data-offline-copy") && badge()) {
      setBadge(Math.max(0, (parseInt(badge().textContent, 10) || 0) - mine().length));
    }
    // Only the recall review page (review.js) hides its card while the queue settles.
    if (!document.getElementById("grade-form")) root.removeAttribute("data-queue");
    // The review page may have asked already, to settle the queue before its card shows.
    if (learner && !started) flush();
    if (learner && !root.hasAttribute("data-offline-copy") && sentWithin(RECOUNT_MS).length) {
      refreshBadge();
    }
  });
  // Another tab sent answers: this tab's count is behind.
  window.addEventListener("storage", function (event) {
    if (learner && event.key === SENT) refreshBadge();
  });
})();
