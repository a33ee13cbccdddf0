{% autoescape off %}// The service worker: keeps the review page, the dashboard, their styles and scripts
// for offline use. Served at /sw.js by studyapp.views.service_worker, which fills in
// the version (a hash of the files below) and the static files' URLs.
//
// - The static files listed below: cache first where their URLs carry a content hash
//   (production), network first otherwise; the cache's name changes with any of them.
//   Other static files pass through.
// - Pages: network first; a page that answers is kept, and served when the network
//   fails (marked data-offline-copy so the review page knows its card may be stale).
// - /api/, /admin/ and anything but GET pass straight through and are never kept.
// - A new version deletes the caches of the old ones on activation.
"use strict";

const VERSION = "{{ version }}";
const CACHE = "study-" + VERSION;
const STATIC_FILES = {{ static_files }};
const PAGES = {{ pages }};
const STATIC_PREFIX = "{{ static_prefix }}";
const STATIC_HASHED = {{ static_hashed }};
const NEVER = ["/api/", "/admin/", "/sw.js", "/healthz", "/readyz", "/metrics"];
const LOGOUT = "{{ logout_url }}";

function passesThrough(url) {
  return NEVER.some((prefix) => url.pathname.startsWith(prefix));
}

// Pages asked for here say so (X-Study-Precache): the server then leaves its one-time
// messages for the page the learner opens next.
async function keepPage(cache, path) {
  try {
    const response = await fetch(path, {
      credentials: "same-origin",
      headers: { "X-Study-Precache": "1" },
    });
    if (keepable(response)) await cache.put(path, response);
  } catch (error) {
    // Offline or signed out during install: the page is kept on its next visit.
  }
}

function keepable(response) {
  if (!response || !response.ok || response.redirected || response.type !== "basic") return false;
  const control = response.headers.get("Cache-Control") || "";
  return !/no-store/.test(control);
}

self.addEventListener("install", (event) => {
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      await cache.addAll(STATIC_FILES);
      await Promise.all(PAGES.map((path) => keepPage(cache, path)));
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
          .map((name) => caches.delete(name)),
      );
      await self.clients.claim();
    })(),
  );
});

async function forgetPages() {
  const cache = await caches.open(CACHE);
  const requests = await cache.keys();
  await Promise.all(
    requests
      .filter((request) => !new URL(request.url).pathname.startsWith(STATIC_PREFIX))
      .map((request) => cache.delete(request)),
  );
}

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
  const cache = await caches.open(CACHE);
  try {
    const response = await fetch(request);
    if (keepable(response)) await cache.put(request, response.clone());
    return response;
  } catch (error) {
    const kept = await cache.match(request, { ignoreVary: true });
    if (kept) return offlineCopy(kept);
    return offlinePage();
  }
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

function offlinePage() {
  const stylesheet = STATIC_FILES.find((url) => url.endsWith(".css")) || "";
  const body =
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    "<title>Offline · Attention study</title>" +
    (stylesheet ? '<link rel="stylesheet" href="' + stylesheet + '">' : "") +
    '</head><body><main id="main"><h1>You are offline</h1>' +
    "<p>This page has not been opened on this device yet, so it cannot be shown without a connection.</p>" +
    '<p><a href="{{ review_url }}">Go on reviewing offline</a></p></main></body></html>';
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
    if (request.method === "POST" && url.pathname === LOGOUT) event.waitUntil(forgetPages());
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
