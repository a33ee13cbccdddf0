{% autoescape off %}// The service worker: keeps the review page, the dashboard, their styles and scripts
// for offline use. Served at /sw.js by studyapp.views.service_worker, which fills in
// the version (a hash of the files below) and the static files' URLs.
//
// - The static files listed below, in the cache "study-<version>": cache first where
//   their URLs carry a content hash (production), network first otherwise; the cache's
//   name changes with any of them. Other static files pass through.
// - Pages: network first. A page is kept only when the server sends no "no-store" (it
//   sends no-store on every page but the review page and the dashboard:
//   studyapp/cache_control.py) and names its learner (X-Study-Learner, an opaque key), in
//   that learner's cache "study-<version>-learner-<key>". When the network fails the kept
//   copy is served, marked data-offline-copy so the page knows its card may be stale.
// - Kept pages follow the learner: a page from the server that names another learner, or
//   none ("none": signed out, session expired), drops the pages kept for anyone else; so
//   does signing out. Offline, the learner's cookie (which lives as long as the session
//   cookie) is compared with the kept pages' learner, where the worker can read cookies;
//   a page served anyway checks it too (static/js/offline.js).
// - /api/, /admin/ and anything but GET pass straight through and are never kept.
// - A new version deletes the caches of the old ones on activation.
"use strict";

const VERSION = "{{ version }}";
const CACHE = "study-" + VERSION;
const LEARNER_CACHE = CACHE + "-learner-";
const STATIC_FILES = {{ static_files }};
const PAGES = {{ pages }};
const STATIC_PREFIX = "{{ static_prefix }}";
const STATIC_HASHED = {{ static_hashed }};
const NEVER = ["/api/", "/admin/", "/sw.js", "/healthz", "/readyz", "/metrics"];
const LOGOUT = "{{ logout_url }}";
const LEARNER_HEADER = "{{ learner_header }}";
const LEARNER_COOKIE = "{{ learner_cookie }}";
const NOBODY = "{{ nobody }}";
const REVIEW = "{{ review_url }}";
const LOGIN = "{% url 'login' %}";

function passesThrough(url) {
  return NEVER.some((prefix) => url.pathname.startsWith(prefix));
}

function isLearnerCache(name) {
  return name.startsWith("study-") && name.includes("-learner-");
}

// Whom the server answered a page for: their key, "" for no one, null when it does not
// say (an answer from before the session was read: an outage, a refused request).
function answeredFor(response) {
  const value = response.headers.get(LEARNER_HEADER);
  if (value === null) return null;
  return value === NOBODY ? "" : value;
}

// Drops the pages kept for anyone but the learner ``key`` ("": for everyone).
async function keepOnly(key) {
  const names = await caches.keys();
  await Promise.all(
    names
      .filter((name) => isLearnerCache(name) && name !== LEARNER_CACHE + key)
      .map((name) => caches.delete(name)),
  );
}

function keepable(response) {
  if (!response || !response.ok || response.redirected || response.type !== "basic") return false;
  const control = response.headers.get("Cache-Control") || "";
  return !/no-store/i.test(control) && Boolean(answeredFor(response));
}

// A page from the network: it tells whom the pages kept now belong to, and is kept for
// its learner when it may be.
async function learnFrom(request, response) {
  const learner = answeredFor(response);
  if (learner === null) return;
  await keepOnly(learner);
  if (keepable(response)) {
    const cache = await caches.open(LEARNER_CACHE + learner);
    await cache.put(request, response.clone());
  }
}

// The learner signed in now by the cookie: their key, "" for no one, undefined where the
// worker cannot read cookies.
async function cookieLearner() {
  if (!self.cookieStore) return undefined;
  try {
    const cookie = await self.cookieStore.get(LEARNER_COOKIE);
    return cookie && cookie.value ? cookie.value : "";
  } catch (error) {
    return undefined;
  }
}

// The kept copy of a page for the learner signed in now, or undefined.
async function keptPage(request) {
  const learner = await cookieLearner();
  if (learner !== undefined) await keepOnly(learner);
  if (learner === "") return undefined;
  const names = (await caches.keys()).filter(isLearnerCache);
  for (const name of names) {
    const kept = await (await caches.open(name)).match(request, { ignoreVary: true });
    if (kept) return kept;
  }
  return undefined;
}

// Pages asked for here say so (X-Study-Precache): the server then leaves its one-time
// messages for the page the learner opens next.
async function keepPage(path) {
  try {
    const request = new Request(path, {
      credentials: "same-origin",
      headers: { "X-Study-Precache": "1" },
    });
    await learnFrom(new Request(path), await fetch(request));
  } catch (error) {
    // Offline or signed out during install: the page is kept on its next visit.
  }
}

self.addEventListener("install", (event) => {
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      await cache.addAll(STATIC_FILES);
      await Promise.all(PAGES.map(keepPage));
      await self.skipWaiting();
    })(),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      const names = await caches.keys();
      await Promise.all(
        names
          .filter((name) => name.startsWith("study-") && name !== CACHE)
          .filter((name) => !name.startsWith(LEARNER_CACHE))
          .map((name) => caches.delete(name)),
      );
      await self.clients.claim();
    })(),
  );
});

async function staticFile(request) {
  const cache = await caches.open(CACHE);
  if (STATIC_HASHED) {
    const kept = await cache.match(request);
    if (kept) return kept;
  }
  try {
    const response = await fetch(request);
    if (response.ok && response.type === "basic") await cache.put(request, response.clone());
    return response;
  } catch (error) {
    const kept = await cache.match(request);
    if (kept) return kept;
    throw error;
  }
}

async function networkFirst(request) {
  let response;
  try {
    response = await fetch(request);
  } catch (error) {
    const kept = await keptPage(request);
    if (kept) return offlineCopy(kept);
    // Offer the kept review page only when there is one for the learner signed in now:
    // signed out, its link would lead back here.
    return offlinePage(Boolean(await keptPage(new Request(REVIEW))));
  }
  await learnFrom(request, response);
  return response;
}

// The kept page, marked so its scripts know it did not come from the server now.
async function offlineCopy(response) {
  const html = await response.text();
  const headers = new Headers(response.headers);
  headers.delete("Content-Length");
  return new Response(html.replace("<html ", '<html data-offline-copy="1" '), {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
}

function offlinePage(reviewKept) {
  const stylesheet = STATIC_FILES.find((url) => url.endsWith(".css")) || "";
  const next = reviewKept
    ? '<p><a href="' + REVIEW + '">Go on reviewing offline</a></p>'
    : "<p>Nothing is kept on this device for offline use: you signed out, or have not " +
      "reviewed here yet. Once you are back online, " +
      '<a href="' + LOGIN + "?next=" + encodeURIComponent(REVIEW) + '">log in</a> to review.</p>';
  const body =
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    "<title>Offline · Attention study</title>" +
    (stylesheet ? '<link rel="stylesheet" href="' + stylesheet + '">' : "") +
    '</head><body><main id="main"><h1>You are offline</h1>' +
    "<p>This page has not been opened on this device yet, so it cannot be shown without a connection.</p>" +
    next +
    "</main></body></html>";
  return new Response(body, {
    status: 503,
    headers: { "Content-Type": "text/html; charset=utf-8" },
  });
}

self.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (request.method !== "GET") {
    // Signing out forgets the pages kept for that learner.
    if (request.method === "POST" && url.pathname === LOGOUT) event.waitUntil(keepOnly(""));
    return;
  }
  if (passesThrough(url)) return;
  if (STATIC_FILES.includes(url.pathname)) {
    event.respondWith(staticFile(request));
  } else if (request.mode === "navigate") {
    event.respondWith(networkFirst(request));
  }
});
{% endautoescape %}
