// The lab page: a code editor over a plain <textarea>, and results without leaving the page.
//
// Editor: Tab indents and Shift+Tab outdents the line or the selected lines; Enter keeps
// the line's indentation. Escape then Tab leaves the editor (the next Tab is the
// browser's), so a keyboard user is never trapped; the page says so in a visible hint.
// Line numbers sit in a gutter that follows the textarea's scrolling.
//
// Submitting: the code goes to POST /api/v1/labs/<slug>/submissions/; the page then polls
// the submission's result partial, waiting longer between looks, until it is done or
// failed (or gives up after a while), swaps it in and announces the verdict. Without this
// script the form posts to the page itself, which works the same way one reload at a time.
(function () {
  "use strict";
  var form = document.getElementById("lab-form");
  var code = document.getElementById("lab-code");
  if (!form || !code) return;

  var INDENT = "    ";
  var FIRST_WAIT = 600;     // ms before the first look at a new submission
  var MAX_WAIT = 5000;      // ms between looks, at most
  var GIVE_UP_AFTER = 120000;  // ms of looking before the page stops and says so
  var announceBox = document.getElementById("lab-announce");
  var problemBox = document.getElementById("lab-problem");
  var runButton = document.getElementById("lab-run");
  var busy = false;

  // --- Editor ----------------------------------------------------------------------

  var keysHint = document.getElementById("lab-code-keys");
  if (keysHint) {
    keysHint.hidden = false;
    var described = (code.getAttribute("aria-describedby") || "").split(" ").filter(Boolean);
    described.unshift(keysHint.id);
    code.setAttribute("aria-describedby", described.join(" "));
  }
  code.classList.add("enhanced");

  var gutter = document.createElement("div");
  gutter.className = "code-gutter";
  gutter.setAttribute("aria-hidden", "true");
  var numbers = document.createElement("pre");
  gutter.appendChild(numbers);
  code.parentNode.insertBefore(gutter, code);
  var shownLines = "";

  // On a narrow screen long lines wrap, so nothing is hidden past the edge (a phone shows
  // no scrollbar to hint at it). The gutter then numbers each line once, on its first
  // row, with blank rows for its continuation: a hidden mirror of the textarea, one block
  // per line at the same width and font, says how many rows each line takes.
  var narrow = window.matchMedia ? window.matchMedia("(max-width: 30rem)") : null;
  var mirror = null;

  function wrapping() { return !!(narrow && narrow.matches); }

  function rowsPerLine(lines) {
    if (!mirror) {
      mirror = document.createElement("div");
      mirror.className = "code-mirror";
      mirror.setAttribute("aria-hidden", "true");
      code.parentNode.appendChild(mirror);
    }
    var style = getComputedStyle(code);
    var width = code.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    mirror.style.width = Math.max(1, width) + "px";
    mirror.textContent = "";
    var blocks = lines.map(function (line) {
      var block = document.createElement("div");
      block.textContent = line || " ";
      mirror.appendChild(block);
      return block;
    });
    var lineHeight = parseFloat(style.lineHeight) || 1;
    return blocks.map(function (block) {
      return Math.max(1, Math.round(block.getBoundingClientRect().height / lineHeight));
    });
  }

  function renumber() {
    var lines = code.value.split("\n");
    var wrap = wrapping();
    code.classList.toggle("wrapping", wrap);
    var rows = wrap ? rowsPerLine(lines) : null;
    var key = lines.length + (rows ? ":" + rows.join(",") + ":" + code.clientWidth : "");
    if (key !== shownLines) {
      var text = [];
      for (var i = 1; i <= lines.length; i++) {
        text.push(String(i));
        for (var extra = 1; rows && extra < rows[i - 1]; extra++) text.push("");
      }
      numbers.textContent = text.join("\n");
      gutter.style.setProperty("--digits", String(Math.max(2, String(lines.length).length)));
      shownLines = key;
    }
    follow();
  }
  if (narrow && narrow.addEventListener) narrow.addEventListener("change", renumber);
  window.addEventListener("resize", renumber);

  function follow() {
    gutter.scrollTop = code.scrollTop;
  }

  // Replace [start, end) with text, keeping the browser's undo history where it can.
  function replaceRange(start, end, text) {
    code.focus();
    code.setSelectionRange(start, end);
    var done = false;
    try { done = document.execCommand("insertText", false, text); } catch (e) { done = false; }
    if (!done || code.value.slice(start, start + text.length) !== text) {
      code.setRangeText(text, start, end, "end");
      code.dispatchEvent(new Event("input", { bubbles: true }));
    }
  }

  function lineStartOf(pos) {
    return code.value.lastIndexOf("\n", pos - 1) + 1;
  }

  function shiftLines(outdent) {
    var value = code.value;
    var start = code.selectionStart, end = code.selectionEnd;
    if (!outdent && start === end) {
      replaceRange(start, end, INDENT);
      return;
    }
    var from = lineStartOf(start);
    // A selection ending at the very start of a line does not take that line along.
    var last = end > start && value.charAt(end - 1) === "\n" ? end - 1 : end;
    var to = value.indexOf("\n", last);
    if (to === -1) to = value.length;
    var lines = value.slice(from, to).split("\n");
    var firstShift = 0;
    var changed = lines.map(function (line, i) {
      if (!outdent) { if (i === 0) firstShift = INDENT.length; return INDENT + line; }
      var cut = line.charAt(0) === "\t" ? 1 : (line.match(/^ {1,4}/) || [""])[0].length;
      if (i === 0) firstShift = -cut;
      return line.slice(cut);
    }).join("\n");
    if (changed === value.slice(from, to)) return;
    replaceRange(from, to, changed);
    if (start === end) {
      var caret = Math.max(from, start + firstShift);
      code.setSelectionRange(caret, caret);
    } else {
      code.setSelectionRange(from, from + changed.length);
    }
  }

  function newLine() {
    var start = code.selectionStart;
    var line = code.value.slice(lineStartOf(start), start);
    var indent = (line.match(/^[ \t]*/) || [""])[0];
    if (/:\s*$/.test(line)) indent += INDENT;
    replaceRange(start, code.selectionEnd, "\n" + indent);
  }

  var leaving = false;  // Escape was pressed: the next Tab moves focus on
  code.addEventListener("keydown", function (event) {
    if (event.key === "Escape") { leaving = true; return; }
    if (event.key === "Tab") {
      if (leaving || event.altKey || event.ctrlKey || event.metaKey) { leaving = false; return; }
      event.preventDefault();
      shiftLines(event.shiftKey);
      return;
    }
    if (event.key === "Shift") return;
    leaving = false;
    if (event.key === "Enter" && !event.shiftKey && !event.altKey && !event.ctrlKey && !event.metaKey && !event.isComposing) {
      event.preventDefault();
      newLine();
    }
  });
  code.addEventListener("blur", function () { leaving = false; });
  code.addEventListener("input", renumber);
  code.addEventListener("scroll", follow);
  window.addEventListener("resize", follow);
  renumber();

  // --- Submitting and polling ------------------------------------------------------

  function say(text) {
    if (!announceBox) return;
    // A change of text is what a live region reads; clear first so a repeat is read too.
    announceBox.textContent = "";
    window.setTimeout(function () { announceBox.textContent = text; }, 50);
  }

  function problem(text) {
    problemBox.textContent = "";
    if (!text) return;
    var p = document.createElement("p");
    p.className = "lab-problem";
    p.textContent = text;
    problemBox.appendChild(p);
  }

  function setBusy(value) {
    busy = value;
    runButton.setAttribute("aria-disabled", value ? "true" : "false");
    runButton.textContent = value ? "Checking…" : "Run the tests";
  }

  function csrfToken() {
    var input = form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  // The first message of a DRF error body: {"code": ["..."]} or {"detail": "..."}.
  function firstMessage(body) {
    if (!body || typeof body !== "object") return "";
    if (typeof body.detail === "string") return body.detail;
    var value = body.code || body[Object.keys(body)[0]];
    if (Array.isArray(value)) value = value[0];
    return typeof value === "string" ? value : "";
  }

  function sentence(text) {
    text = text.trim();
    return /[.!?]$/.test(text) ? text : text + ".";
  }

  function refused(status, body, retryAfter) {
    var message = firstMessage(body);
    if (status === 503) {
      return "Your code cannot be run right now. " + sentence(message || "No sandbox is available") +
        " Nothing was submitted; your code is kept in the editor, so you can run it again later.";
    }
    if (status === 429) {
      var seconds = parseInt(retryAfter, 10);
      return "Too many submissions in a short time. Try again " +
        (seconds > 0 ? "in " + seconds + " second" + (seconds === 1 ? "" : "s") : "in a moment") +
        "; your code is kept in the editor.";
    }
    if (status === 409) {
      return sentence(message || "An earlier submission of yours is still being graded") +
        " Your code is kept in the editor.";
    }
    if (status === 400) return message || "The code was refused.";
    if (status === 401 || status === 403) return "Your session has ended: log in again, then run the tests.";
    return "The code could not be submitted (error " + status + "). Your code is kept in the editor.";
  }

  function submissionUrl(id) {
    return form.getAttribute("data-submissions") + id + "/";
  }

  function swapIn(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var fresh = doc.getElementById("lab-live");
    var live = document.getElementById("lab-live");
    if (!fresh || !live) return null;
    var hadFocus = live.contains(document.activeElement);
    live.replaceWith(document.importNode(fresh, true));
    var result = document.getElementById("lab-result");
    // Focus inside the replaced part would fall back to the page's start: keep it nearby.
    if (hadFocus && result) result.focus();
    return result;
  }

  function verdictWords(result) {
    var headline = result && result.querySelector("#lab-headline");
    return headline ? headline.textContent.replace(/^[✓✗]\s*/, "").trim() : "";
  }

  // The partial tells a reader without this script to look again; here the page does.
  function waiting() {
    var note = document.getElementById("lab-pending");
    if (note) note.textContent = "The result appears here when it is ready.";
  }

  function poll(id) {
    var began = Date.now();
    var wait = FIRST_WAIT;
    function look() {
      fetch(submissionUrl(id) + "result/", { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (response) {
          // A redirect here is to the log-in page: the session ended while waiting.
          if (response.redirected || response.status === 401 || response.status === 403) return null;
          if (!response.ok) throw new Error("status " + response.status);
          return response.text();
        })
        .then(function (html) {
          if (html === null) {
            setBusy(false);
            problem("Your session has ended: log in again to see the result. Your submission is saved.");
            return;
          }
          var result = swapIn(html);
          var status = result ? result.getAttribute("data-status") : "";
          if (status === "done" || status === "failed") {
            setBusy(false);
            say(verdictWords(result));
            return;
          }
          waiting();
          next();
        })
        .catch(next);
    }
    function next() {
      if (Date.now() - began > GIVE_UP_AFTER) {
        setBusy(false);
        problem("Still waiting for the sandbox. Your submission is saved: open it from the list of your submissions later.");
        return;
      }
      window.setTimeout(look, wait);
      wait = Math.min(Math.round(wait * 1.6), MAX_WAIT);
    }
    next();
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (busy) return;
    problem("");
    setBusy(true);
    say("Submitted. Running the tests…");
    fetch(form.getAttribute("data-api"), {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "X-CSRFToken": csrfToken()
      },
      body: JSON.stringify({ code: code.value })
    }).then(function (response) {
      return response.json().catch(function () { return null; }).then(function (body) {
        if (response.status === 202 && body && body.id) {
          if (window.history && window.history.replaceState) window.history.replaceState(null, "", submissionUrl(body.id));
          poll(body.id);
          return;
        }
        setBusy(false);
        problem(refused(response.status, body, response.headers.get("Retry-After")));  // an alert: read out at once
      });
    }).catch(function () {
      setBusy(false);
      problem("The server could not be reached. Your code is kept in the editor; try again when the connection is back.");
    });
  });

  function busyStatus(value) { return value === "queued" || value === "running"; }

  // A page opened on a submission that is still queued or running keeps looking.
  var shown = document.getElementById("lab-result");
  var status = shown ? shown.getAttribute("data-status") : "";
  // After a post without this script's help (or a link from the list of submissions) the
  // page opens on what the learner came for: the refused code, or the submission's result.
  if (document.getElementById("lab-code-error")) code.focus();
  else if (shown && !busyStatus(status) && /\/submissions\/\d+\/$/.test(window.location.pathname)) shown.focus();
  if (busyStatus(status)) {
    setBusy(true);
    waiting();
    poll(shown.getAttribute("data-submission"));
  }
})();
