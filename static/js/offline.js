// Answers given offline, on every page: the queue, its sending, the nav badge and the
// service worker that keeps the review page, its styles and scripts for offline use.
//
// The queue lives in localStorage ("study.review-queue.v1"): each item is one grade,
// {key, card, result, learner, at}, stored with a fresh Idempotency-Key before it is
// first sent to POST /api/v1/reviews/. The server replays a repeated key instead of
// counting the answer twice, so an item may be sent as often as needed and counts once.
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

  // Only the signed-in learner's answers: another learner's stay where they are.
  function mine() {
    if (!learner) return [];
    return readQueue().filter(function (item) { return String(item.learner) === learner; });
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

  // fetch with a deadline: a server that does not answer counts as a network failure.
  function request(url, options) {
    var controller = window.AbortController ? new AbortController() : null;
    var timer = controller ? window.setTimeout(function () { controller.abort(); }, TIMEOUT_MS) : null;
    var settings = { credentials: "same-origin", cache: "no-store" };
    Object.keys(options || {}).forEach(function (name) { settings[name] = options[name]; });
    if (controller) settings.signal = controller.signal;
    return fetch(url, settings).then(function (response) {
      window.clearTimeout(timer);
      setReachable(true);
      return response;
    }, function (error) {
      window.clearTimeout(timer);
      setReachable(false);
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
  function sendAll() {
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
    if (result.waiting) {
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

  // Signed out: forget the pages kept for the last learner (the styles and scripts stay).
  function forgetPages() {
    if (!window.caches) return;
    caches.keys().then(function (names) {
      names.filter(function (name) { return name.indexOf("study-") === 0; }).forEach(function (name) {
        caches.open(name).then(function (cache) {
          cache.keys().then(function (requests) {
            requests.forEach(function (req) {
              if (new URL(req.url).pathname.indexOf("/static/") !== 0) cache.delete(req);
            });
          });
        });
      });
    }).catch(function () { /* storage blocked */ });
  }

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
  window.addEventListener("offline", function () { setReachable(false); });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible" && mine().length) flush();
  });
  document.addEventListener("DOMContentLoaded", function () {
    registerWorker();
    if (!learner) forgetPages();
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
