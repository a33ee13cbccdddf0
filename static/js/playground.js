// Live attention playground: edits are sent to POST /api/v1/attention/ and the
// result tables are rebuilt with the same markup the server renders first.
(function () {
  "use strict";
  var form = document.getElementById("playground-form");
  if (!form) return;
  var results = document.getElementById("pg-results");
  var panel = document.querySelector(".pg-results");
  var errorBox = document.getElementById("pg-error");
  var MAX = 8;
  var timer = null;
  var sequence = 0;

  // The token rides on a data attribute, not in the form: the form is a GET and would
  // otherwise put it in the URL.
  function csrfToken() {
    return form.getAttribute("data-csrf") || "";
  }

  function mode() {
    var checked = form.querySelector("input[name=mode]:checked");
    return checked ? checked.value : "qkv";
  }

  function tokens() {
    return document.getElementById("pg-tokens").value.split(",")
      .map(function (t) { return t.trim(); })
      .filter(function (t) { return t.length; });
  }

  function parseCell(text) {
    var cleaned = text.trim().replace("\u2212", "-").replace(",", ".");
    if (cleaned === "") return 0;
    if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(cleaned)) return null;
    var value = Number(cleaned);
    return isFinite(value) ? value : null;
  }

  // A size outside 1..MAX is clamped, and the note beside the size boxes says so.
  function clampSize(input, notes) {
    var n = parseInt(input.value, 10);
    var clamped = Math.min(Math.max(isNaN(n) ? 1 : n, 1), MAX);
    if (String(clamped) !== input.value.trim()) {
      var what = input.name.replace(/-rows$/, " rows").replace(/-cols$/, " columns");
      notes.push(what + ": expected a whole number from 1 to " + MAX + ", got \u201c" +
        input.value + "\u201d; using " + clamped + ".");
    }
    return clamped;
  }

  function sizeNote(fieldset, notes) {
    var note = fieldset.querySelector(".size-note");
    if (!note) {
      note = el("p", { "class": "help size-note", role: "status" });
      fieldset.querySelector(".shape").insertAdjacentElement("afterend", note);
    }
    note.textContent = notes.join(" ");
    note.hidden = !notes.length;
  }

  // Rebuild one grid at its new shape, keeping the values that still fit.
  function resizeGrid(fieldset) {
    var name = fieldset.getAttribute("data-matrix");
    var notes = [];
    var rows = clampSize(fieldset.querySelector("[name='" + name + "-rows']"), notes);
    var cols = clampSize(fieldset.querySelector("[name='" + name + "-cols']"), notes);
    sizeNote(fieldset, notes);
    var tbody = fieldset.querySelector("tbody");
    var old = {};
    tbody.querySelectorAll("input").forEach(function (input) { old[input.name] = input.value; });
    tbody.textContent = "";
    for (var i = 0; i < rows; i++) {
      var tr = document.createElement("tr");
      for (var j = 0; j < cols; j++) {
        var td = document.createElement("td");
        var input = document.createElement("input");
        input.type = "text";
        // A text keyboard: phone decimal keypads may have no minus sign.
        input.inputMode = "text";
        input.pattern = "[+\\-\u2212]?[0-9.,eE+\\-\u2212]*";
        input.setAttribute("autocapitalize", "off");
        input.spellcheck = false;
        input.autocomplete = "off";
        // Named and labelled as exercises/cells.py names a playground cell.
        input.name = name + "-" + i + "-" + j;
        input.value = old[input.name] !== undefined ? old[input.name] : "0";
        input.setAttribute("aria-label", name + " row " + (i + 1) + " column " + (j + 1));
        td.appendChild(input);
        tr.appendChild(td);
      }
      tbody.appendChild(tr);
    }
  }

  function readMatrices(problems) {
    var out = {};
    var group = form.querySelector(".matrices[data-mode='" + mode() + "']");
    group.querySelectorAll("fieldset[data-matrix]").forEach(function (fieldset) {
      var name = fieldset.getAttribute("data-matrix");
      var matrix = [];
      fieldset.querySelectorAll("tbody tr").forEach(function (tr, i) {
        var row = [];
        tr.querySelectorAll("input").forEach(function (input, j) {
          var value = parseCell(input.value);
          var cell = input.parentNode;
          if (value === null) {
            problems.push(name + " row " + (i + 1) + ", column " + (j + 1) + ": expected a number, got \u201c" + input.value + "\u201d.");
            input.setAttribute("aria-invalid", "true");
            cell.className = "wrong";
          } else {
            input.removeAttribute("aria-invalid");
            cell.className = "";
          }
          row.push(value);
        });
        matrix.push(row);
      });
      out[name] = matrix;
    });
    return out;
  }

  function fmt(value) {
    if (value === null || value === undefined) return "";
    if (!isFinite(value)) return value < 0 ? "\u2212\u221e" : "\u221e";
    if (Number.isInteger(value)) return String(value);
    var text = value.toFixed(3);
    if (/^-?0\.000$/.test(text)) return "0";
    return text.replace("-", "\u2212");
  }

  function heatStyle(w) {
    w = Math.min(Math.max(w, 0), 1);
    // As heat_style on the server: lightness never falls in (50, 60), where no ink has 4.5:1.
    var lightness = Math.round(98 - 74 * w);
    if (lightness > 50 && lightness < 60) lightness = lightness >= 55 ? 60 : 50;
    return "background:hsl(214,70%," + lightness + "%);color:" + (lightness <= 50 ? "#ffffff" : "#1d2430");
  }

  function label(list, i, fallback) {
    return list && list[i] ? list[i] : fallback + " " + (i + 1);
  }

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function table(matrix, caption, rowLabels, colLabels, heat, rowAxis, colAxis, id) {
    var t = el("table", { "class": heat ? "data heatmap" : "data" });
    if (id) t.id = id;
    t.appendChild(el("caption", {}, caption));
    var head = el("tr");
    head.appendChild(el("th", { scope: "col", "class": "axis" }, rowAxis + " \u2193 \u00b7 " + colAxis + " \u2192"));
    var cols = matrix.length ? matrix[0].length : 0;
    for (var j = 0; j < cols; j++) head.appendChild(el("th", { scope: "col" }, label(colLabels, j, colAxis)));
    var thead = el("thead");
    thead.appendChild(head);
    t.appendChild(thead);
    var tbody = el("tbody");
    matrix.forEach(function (row, i) {
      var tr = el("tr");
      var rl = label(rowLabels, i, rowAxis);
      tr.appendChild(el("th", { scope: "row" }, rl));
      row.forEach(function (value, j) {
        var attrs = {};
        if (heat) {
          attrs.style = heatStyle(value);
          attrs.title = rowAxis + " " + rl + ", " + colAxis + " " + label(colLabels, j, colAxis) + ": " + fmt(value);
        }
        tr.appendChild(el("td", attrs, fmt(value)));
      });
      tbody.appendChild(tr);
    });
    t.appendChild(tbody);
    var box = el("div", { "class": "scroll-x" });
    box.appendChild(t);
    return box;
  }

  // Tables that overflow become focusable regions (exercise.js keeps them so).
  function syncScrollers() {
    if (window.studyScrollers) window.studyScrollers();
  }

  function render(data, scale) {
    var names = tokens();
    var q = names.slice(0, data.Q.length);
    var k = names.slice(0, data.K.length);
    results.textContent = "";
    var first = el("div", { "class": "matrices" });
    first.appendChild(table(data.weights, "Weights A (softmax of each row)", q, k, true, "query", "key", "weights-table"));
    first.appendChild(table(data.scores, scale ? "Scores Q K\u1d40 / \u221ad\u2096 (before the mask)" : "Scores Q K\u1d40 (unscaled, before the mask)", q, k, false, "query", "key", "scores-table"));
    first.appendChild(table(data.output, "Output A V", q, null, false, "query", "dim", "output-table"));
    var second = el("div", { "class": "matrices" });
    second.appendChild(table(data.Q, "Q", q, null, false, "token", "dim"));
    second.appendChild(table(data.K, "K", k, null, false, "token", "dim"));
    second.appendChild(table(data.V, "V", k, null, false, "token", "dim"));
    results.appendChild(first);
    results.appendChild(second);
    syncScrollers();
  }

  // While an error stands, the results still shown are from the last input that worked.
  function markStale(stale) {
    var note = document.getElementById("pg-stale");
    results.classList.toggle("stale", stale && results.children.length > 0);
    if (note) note.hidden = !(stale && results.children.length > 0);
  }

  function showErrors(list) {
    errorBox.textContent = "";
    markStale(list.length > 0);
    if (!list.length) return;
    var box = el("div", { "class": "pg-error" });
    var ul = el("ul");
    list.forEach(function (m) { ul.appendChild(el("li", {}, m)); });
    box.appendChild(ul);
    errorBox.appendChild(box);
  }

  function flatten(body) {
    var out = [];
    if (!body || typeof body !== "object") return ["The server could not compute this input."];
    Object.keys(body).forEach(function (key) {
      var value = body[key];
      var text = Array.isArray(value) ? value.join(" ") : (typeof value === "object" ? JSON.stringify(value) : String(value));
      out.push(key === "detail" || key === "non_field_errors" ? text : key + ": " + text);
    });
    return out;
  }

  function compute() {
    var problems = [];
    var matrices = readMatrices(problems);
    if (problems.length) { showErrors(problems); return; }
    var scale = document.getElementById("pg-scale").checked;
    var payload = Object.assign({}, matrices, {
      mask: document.getElementById("pg-causal").checked ? "causal" : "none",
      scale: scale
    });
    var mine = ++sequence;
    form.setAttribute("aria-busy", "true");
    fetch(form.getAttribute("data-api"), {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify(payload)
    }).then(function (response) {
      return response.json().catch(function () { return null; }).then(function (body) {
        return { status: response.status, body: body };
      });
    }).then(function (answer) {
      if (mine !== sequence) return;  // a newer edit already went out
      form.removeAttribute("aria-busy");
      if (answer.status === 200) { showErrors([]); render(answer.body, scale); }
      else showErrors(flatten(answer.body));
    }).catch(function () {
      if (mine !== sequence) return;
      form.removeAttribute("aria-busy");
      showErrors(["The playground could not reach the server; press Compute to try again."]);
    });
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(compute, 200);
  }

  form.addEventListener("input", function (event) {
    var target = event.target;
    if (/-(rows|cols)$/.test(target.name)) {
      resizeGrid(target.closest("fieldset"));
      syncScrollers();
    }
    if (target.name === "mode") return;
    schedule();
  });
  form.addEventListener("change", function (event) {
    var target = event.target;
    if (target.name === "mode") {
      form.querySelectorAll(".matrices[data-mode]").forEach(function (group) {
        var active = group.getAttribute("data-mode") === target.value;
        group.hidden = !active;
        group.querySelectorAll("fieldset").forEach(function (f) { f.disabled = !active; });
      });
      compute();
    }
  });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    clearTimeout(timer);
    compute();
  });

  // On a phone the results panel stays at the bottom of the screen. The page keeps room
  // for it when scrolling a field into view (scroll-padding), and a field that still ends
  // under it on focus is scrolled above it (WCAG 2.4.11, focus not obscured).
  function panelCover() {
    if (!panel || getComputedStyle(panel).position !== "sticky") return 0;
    return panel.getBoundingClientRect().height;
  }
  function keepRoom() {
    document.documentElement.style.scrollPaddingBottom = panelCover() + 8 + "px";
  }
  function keepClear(event) {
    var target = event.target;
    if (!panel || panel.contains(target) || !panelCover()) return;
    var top = panel.getBoundingClientRect().top;
    var bottom = target.getBoundingClientRect().bottom;
    if (bottom + 8 > top) window.scrollBy(0, bottom + 8 - top);
  }
  if (panel) {
    if (window.ResizeObserver) new ResizeObserver(keepRoom).observe(panel);
    window.addEventListener("resize", keepRoom);
    keepRoom();
    document.addEventListener("focusin", function (event) {
      keepClear(event);
      requestAnimationFrame(function () { keepClear(event); });
    });
  }

  // Predict first: with a preset loaded, the results stay hidden until the learner
  // commits to a prediction (stored through the API) or skips it.
  var predict = document.getElementById("pg-predict");
  if (predict) {
    var verdict = document.getElementById("pg-predict-verdict");
    // While the results wait, the results panel says why and offers the skip too.
    var waiting = document.getElementById("pg-results-waiting");
    var reveal = function () {
      results.hidden = false;
      if (waiting) waiting.hidden = true;
      panel.classList.remove("pending");
      syncScrollers();
    };
    results.hidden = true;
    if (waiting) waiting.hidden = false;
    // Nothing to keep in view yet: the panel stays in its place and covers no choice.
    panel.classList.add("pending");
    predict.hidden = false;
    var skip = function () {
      predict.hidden = true;
      reveal();
      document.getElementById("results-heading").focus();
    };
    document.getElementById("pg-predict-skip").addEventListener("click", skip);
    if (waiting) document.getElementById("pg-results-skip").addEventListener("click", skip);
    predict.addEventListener("submit", function (event) {
      event.preventDefault();
      var chosen = predict.querySelector("input[name=pg-prediction]:checked");
      if (!chosen) {
        verdict.className = "error";
        verdict.textContent = "Choose one answer first.";
        return;
      }
      fetch(predict.getAttribute("data-api"), {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": csrfToken() },
        body: JSON.stringify({ preset: predict.getAttribute("data-preset"), answer: chosen.value })
      }).then(function (response) {
        return response.json().catch(function () { return null; }).then(function (body) {
          return { status: response.status, body: body };
        });
      }).then(function (answer) {
        if (answer.status !== 201) {
          verdict.className = "error";
          verdict.textContent = flatten(answer.body).join(" ");
          return;
        }
        predict.querySelectorAll("input, button").forEach(function (node) { node.disabled = true; });
        verdict.className = "part-verdict " + (answer.body.correct ? "ok" : "no");
        verdict.textContent = (answer.body.correct ? "\u2713 Right. " : "\u2717 Wrong. ") + answer.body.message;
        reveal();
        // The controls just used are disabled: focus moves to the verdict, not to the page.
        verdict.focus();
      }).catch(function () {
        verdict.className = "error";
        verdict.textContent = "The prediction could not be sent; try again.";
      });
    });
  }
})();
