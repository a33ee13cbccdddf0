"""The exercise and playground pages on a phone (390 x 844) and a laptop (1280 x 800).

Walked by keyboard in headless Chromium: no focused control is hidden under anything
(WCAG 2.4.11), no text runs past the screen's edge, the focus ring has 3:1 against the
panel (WCAG 1.4.11), every target is at least 24 px (WCAG 2.5.8), and axe finds nothing.
Each state is saved as a screenshot in artifacts/screenshots/phone-<state>-<width>.png.
"""

from __future__ import annotations

import numpy as np
import pytest

from exercises import services as exercise_services
from exercises.cells import cell_name
from exercises.checking.mistakes import MISTAKES
from exercises.kinds import KINDS, get_kind
from exercises.models import Exercise

from .conftest import assert_axe_clean, log_in, open_view, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"phone": {"width": 390, "height": 844}, "laptop": {"width": 1280, "height": 800}}
MIN_TARGET = 24
MAX_TABS = 160

# For each element that takes focus by Tab: is the point at its centre the element itself
# (or inside it), i.e. not covered by a sticky panel or anything else?
FOCUS_SEEN = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  // A link that wraps has a box per line: the centre of each must show the link.
  const boxes = [...el.getClientRects()].filter(r => r.width && r.height);
  let covered = null;
  for (const r of boxes.length ? boxes : [el.getBoundingClientRect()]) {
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    if (!hit || !(hit === el || el.contains(hit))) {
      covered = hit ? hit.outerHTML.slice(0, 80) : "nothing (off screen)";
      break;
    }
  }
  return {
    key: el.id || el.name || el.outerHTML.slice(0, 80),
    what: el.outerHTML.slice(0, 120),
    seen: covered === null,
    covered_by: covered,
  };
}"""

# Text outside tables (grids scroll sideways in their own box) that reaches past the
# viewport's edges, and how far the page itself scrolls sideways.
TEXT_OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const bad = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.textContent.trim()) continue;
    const parent = node.parentElement;
    if (parent.closest("table, svg, [hidden], .visually-hidden, .skip-link")) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      if (r.width && (r.right > width + 1 || r.left < -1)) {
        bad.push(node.textContent.trim().slice(0, 60) + " [" + Math.round(r.left) + ".." +
                 Math.round(r.right) + " of " + width + "]");
        break;
      }
    }
  }
  return {bad, page_scrolls: document.documentElement.scrollWidth - width};
}"""

# Every visible control and link with its size; links inside a sentence are exempt from
# the width (WCAG 2.5.8's inline exception) but not from the height.
TARGETS = """() => {
  const out = [];
  const sel = "a[href], button, input:not([type=hidden]), select, textarea, summary";
  for (const el of document.querySelectorAll(sel)) {
    if (el.closest("[hidden], .visually-hidden, .skip-link")) continue;
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    const style = getComputedStyle(el);
    if (style.visibility === "hidden" || style.display === "none") continue;
    const parentText = el.parentElement.textContent.trim();
    const inline = el.tagName === "A" && parentText !== el.textContent.trim();
    out.push({what: el.outerHTML.slice(0, 100), w: r.width, h: r.height, inline});
  }
  return out;
}"""

# The focus ring's colour and the background it is drawn on (the nearest painted ancestor).
RING = """() => {
  const el = document.activeElement;
  const style = getComputedStyle(el);
  let node = el.parentElement, bg = "rgb(255, 255, 255)";
  while (node) {
    const c = getComputedStyle(node).backgroundColor;
    if (c && c !== "rgba(0, 0, 0, 0)" && c !== "transparent") { bg = c; break; }
    node = node.parentElement;
  }
  return {ring: style.outlineColor, width: style.outlineWidth, kind: style.outlineStyle, bg};
}"""


def _rgb(css: str) -> tuple[float, float, float]:
    inside = css[css.index("(") + 1 : css.index(")")]
    r, g, b = (float(x) for x in inside.replace("/", ",").split(",")[:3])
    return r, g, b


def contrast(a: str, b: str) -> float:
    def lum(css: str) -> float:
        channels = [c / 255 for c in _rgb(css)]
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def layout_view(browser, width: str):
    """A page at one of the two widths; the pages' offline side is tested elsewhere."""
    yield from open_view(browser, width, WIDTHS[width], service_workers="block")


@pytest.fixture(params=list(WIDTHS))
def view(request, browser):
    yield from layout_view(browser, request.param)


def tab_through(page, state: str) -> list[str]:
    """Press Tab from the top until focus comes round again; assert each focus is in sight."""
    page.evaluate(
        "() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }"
    )
    seen: list[str] = []
    hidden = []
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        found = page.evaluate(FOCUS_SEEN)
        if found is None:
            break
        if found["key"] in seen[:1]:
            break
        seen.append(found["key"])
        if not found["seen"]:
            hidden.append(f"{found['what']} is under {found['covered_by']}")
    assert seen, f"{state}: nothing took focus"
    assert not hidden, f"{state} at {page.width_name}: focused controls hidden:\n" + "\n".join(
        hidden
    )
    return seen


def assert_text_fits(page, state: str) -> None:
    found = page.evaluate(TEXT_OVERFLOW)
    assert found["page_scrolls"] <= 1, f"{state}: the page scrolls sideways by {found}"
    assert not found["bad"], f"{state} at {page.width_name}: text past the edge: {found['bad']}"


def assert_targets(page, state: str) -> None:
    small = [
        t
        for t in page.evaluate(TARGETS)
        if t["h"] < MIN_TARGET - 0.5 or (not t["inline"] and t["w"] < MIN_TARGET - 0.5)
    ]
    assert not small, f"{state} at {page.width_name}: targets under {MIN_TARGET} px: {small[:6]}"


def assert_ring(page, selector: str, state: str) -> None:
    page.focus(selector)
    # Focus by keyboard, so :focus-visible applies as it does for a learner.
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    ring = page.evaluate(RING)
    assert ring["kind"] == "solid" and float(ring["width"].rstrip("px")) >= 2, ring
    ratio = contrast(ring["ring"], ring["bg"])
    assert ratio >= 3, f"{state}: focus ring {ring['ring']} on {ring['bg']} is {ratio:.2f}:1"


def make_walk(axe, screenshot):
    """Every check of one page state, with its screenshot and axe at WCAG 2.2 AA."""

    def run(page, state: str, *, tab: bool = True) -> None:
        screenshot(page, f"phone-{state}-{page.width_name}", full_page=False)
        screenshot(page, f"phone-{state}-{page.width_name}-full")
        assert_text_fits(page, state)
        assert_targets(page, state)
        assert_axe_clean(axe, page, state)
        if tab:
            tab_through(page, state)

    return run


@pytest.fixture
def walk(axe, screenshot):
    return make_walk(axe, screenshot)


def _wrong_answers(exercise: Exercise) -> tuple[dict, bool]:
    """A mistake the kind names if it has one (so a diagnosis shows), else the solution
    with every number off by 0.25; choices take a wrong choice. Also: whether a named
    mistake was used."""
    kind = get_kind(exercise.kind)
    numeric = [a["name"] for a in exercise.asks if not a.get("choices")]
    mistaken = None
    for code in kind.mistakes:
        mistaken = kind.answers_under(exercise.inputs, MISTAKES[code].recipe)
        if mistaken is not None and all(name in mistaken for name in numeric):
            break
        mistaken = None
    named = mistaken is not None and any(
        not np.allclose(mistaken[name], exercise.solution[name]) for name in numeric
    )
    answers = {}
    for ask in exercise.asks:
        name = ask["name"]
        if ask.get("choices"):
            answers[name] = next(c for c in ask["choices"] if c != exercise.solution[name])
        elif named and mistaken is not None:
            answers[name] = np.asarray(mistaken[name], dtype=float)
        else:
            right = np.asarray(exercise.solution[name], dtype=float)
            answers[name] = right + (1 if ask.get("exact") else 0.25)
    return answers, named


def _type_answers(page, exercise: Exercise, answers: dict) -> None:
    """Type every answer as a learner would, numbers at six decimals."""
    for ask in exercise.asks:
        part, value = ask["name"], answers[ask["name"]]
        if ask.get("choices"):
            page.locator(f"[name='{cell_name(part)}'][value='{value}']").check()
            continue
        array = np.asarray(value, dtype=float)
        cells = [((), array)] if not ask["shape"] else list(np.ndenumerate(array))
        for index, number in cells:
            text = f"{int(number)}" if ask.get("exact") else f"{float(number):.6f}"
            page.locator(f"[name='{cell_name(part, index)}']").fill(text)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_exercise_kind_fits_and_keeps_focus_in_sight(live_server, view, walk, learner, kind):
    log_in(view.context, live_server, learner)
    exercise = exercise_services.exercise_create(owner=learner, kind=kind, params={})
    view.goto(f"{live_server.url}/exercises/{exercise.pk}/")
    if view.locator("#prediction-form").count():
        view.locator("#prediction-form input[type=radio]").first.check()
        view.get_by_role("button", name="Commit to this prediction").click()
        view.wait_for_selector("#prediction-made")
    walk(view, f"exercise-{kind}-new")
    answers, named = _wrong_answers(exercise)
    _type_answers(view, exercise, answers)
    walk(view, f"exercise-{kind}-typed", tab=False)
    view.get_by_role("button", name="Check answers").click()
    view.wait_for_selector("#exercise-feedback")
    assert "Not quite" in view.inner_text("#exercise-feedback")
    assert view.locator(".part-verdict.no, .part-verdict.follows").count()
    if named:
        assert view.locator(".diagnosis").count(), "a named mistake shows its diagnosis"
    walk(view, f"exercise-{kind}-wrong")


def test_a_wide_answer_grid_scrolls_in_its_own_box_with_a_cue(live_server, view, learner):
    """multi_head's output grid at six decimals is wider than a phone: it scrolls inside
    its part, the part's text wraps at the screen, and the box draws edge shadows."""
    log_in(view.context, live_server, learner)
    exercise = exercise_services.exercise_create(owner=learner, kind="multi_head", params={})
    view.goto(f"{live_server.url}/exercises/{exercise.pk}/")
    _type_answers(view, exercise, _wrong_answers(exercise)[0])
    widest = view.evaluate(
        """() => Math.max(...[...document.querySelectorAll('.part .scroll-x')].map(box => {
             const fieldset = box.closest('fieldset').getBoundingClientRect();
             return box.getBoundingClientRect().right - fieldset.right;
           }))"""
    )
    assert widest <= 0, "an answer box reaches past its part"
    cue = view.evaluate(
        "() => getComputedStyle(document.querySelector('.part .scroll-x')).backgroundImage"
    )
    assert cue.count("gradient") == 4
    if view.width_name == "phone":
        scrolls = view.evaluate(
            "() => [...document.querySelectorAll('.part .scroll-x')]"
            ".some(box => box.scrollWidth > box.clientWidth)"
        )
        assert scrolls, "six-decimal answers should need more than a phone's width here"


def test_the_playground_keeps_focus_clear_of_the_results_panel(live_server, view, walk, learner):
    log_in(view.context, live_server, learner)
    view.goto(f"{live_server.url}/playground/?preset=abc")
    view.wait_for_selector("#pg-predict", state="visible")
    # Before the prediction nothing covers its choices.
    for choice in view.locator("input[name='pg-prediction']").all():
        box = choice.bounding_box()
        assert box is not None
        hit = view.evaluate(
            "([x, y]) => document.elementFromPoint(x, y)?.name", [box["x"] + 4, box["y"] + 4]
        )
        if box["y"] + box["height"] < WIDTHS[view.width_name]["height"]:
            assert hit == "pg-prediction"
    walk(view, "playground-predict")
    view.locator("input[name='pg-prediction']").first.check()
    view.get_by_role("button", name="Commit and show the weights").click()
    view.wait_for_selector("#weights-table", state="visible")
    # The controls just used are disabled; focus lands on the verdict, not on the page.
    wait_until(view, "document.activeElement.id === 'pg-predict-verdict'")
    walk(view, "playground-results")
    # Eight columns of X: the grid scrolls in its box; text still fits.
    view.get_by_role("radio", name="X and W").check()
    view.fill("#X-cols", "8")
    view.fill("#W_Q-rows", "8")
    view.fill("#W_K-rows", "8")
    view.fill("#W_V-rows", "8")
    view.wait_for_selector("[name='X-0-7']")
    view.fill("[name='X-0-7']", "0.123456")
    wait_until(view, "document.querySelectorAll('#scores-table tbody tr').length > 0")
    walk(view, "playground-8-columns")
    view.fill("[name='X-0-7']", "oops")
    view.wait_for_selector("#pg-error li")
    walk(view, "playground-error", tab=False)


def test_skipping_the_prediction_moves_focus_to_the_results(live_server, view, learner):
    log_in(view.context, live_server, learner)
    view.goto(f"{live_server.url}/playground/?preset=abc")
    view.get_by_role("button", name="Skip").click()
    wait_until(view, "document.activeElement.id === 'results-heading'")


def test_the_exercise_list_with_every_kind_s_fields(live_server, view, walk, learner):
    log_in(view.context, live_server, learner)
    exercise_services.exercise_create(owner=learner, kind="multi_head", params={})
    view.goto(f"{live_server.url}/exercises/")
    for kind in sorted(KINDS):
        view.select_option("#id_kind", kind)
        walk(view, f"exercise-list-{kind}", tab=kind == "attention")


@pytest.mark.parametrize("path", ["/exercises/", "/playground/"])
def test_the_focus_ring_has_three_to_one_on_panels_and_on_the_header(
    live_server, view, learner, path
):
    log_in(view.context, live_server, learner)
    view.goto(f"{live_server.url}{path}")
    assert_ring(view, "main .panel button[type=submit]", path)
    assert_ring(view, "main .panel input", path)
    assert_ring(view, ".site-nav a", f"{path} header")
