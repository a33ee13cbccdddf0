"""After a wrong answer: the hint for the first wrong part, the worked solution's steps
(built from the engine's own intermediates, the first wrong step marked), and the lesson
section a diagnosis links to. Through the API, for every kind, hand-rounded work included."""

import numpy as np
import pytest

from exercises import engine
from exercises.checking import MISTAKES
from exercises.checking.mistakes import LESSON_SECTIONS
from exercises.kinds import KINDS, get_kind
from exercises.models import Exercise
from tests.exercises.hand_solver import hand_answers
from tests.exercises.kind_cases import kind_cases

EXERCISES = "/api/v1/exercises/"

# One parameter set per kind: its cases' example (tests/exercises/kinds/; a kind without
# cases fails test_every_registered_kind_has_its_cases).
KIND_PARAMS = {name: cases.example for name, cases in kind_cases().items() if name in KINDS}


def create(api, kind, seed=3):
    r = api.post(EXERCISES, {"kind": kind, "params": {**KIND_PARAMS[kind], "seed": seed}}, "json")
    assert r.status_code == 201, r.json()
    return r.json()


def submit(api, ex, answers):
    r = api.post(f"{EXERCISES}{ex['id']}/submit/", {"answers": answers}, format="json")
    assert r.status_code == 200, r.json()
    return r.json()


def right_answers(ex):
    return Exercise.objects.get(pk=ex["id"]).solution


def spoiled(ex, answers, part=None):
    """``answers`` with one part made wrong (the first asked, unless named)."""
    part = part or ex["asks"][0]["name"]
    ask = next(a for a in ex["asks"] if a["name"] == part)
    out = dict(answers)
    if ask.get("choices"):
        out[part] = next(c for c in ask["choices"] if c != answers[part])
    elif ask.get("exact"):
        out[part] = np.asarray(np.asarray(answers[part], dtype=object) + 7).tolist()
    else:
        out[part] = (np.asarray(answers[part], dtype=float) + 0.5).tolist()
    return out


def numbers_in(value):
    """The numbers of a part as a hint could give them away: three decimals, and whole."""
    flat = np.asarray(value, dtype=object).ravel().tolist()
    shown = set()
    for x in flat:
        if isinstance(x, str):
            continue
        x = float(x)
        if not x.is_integer():
            shown.add(f"{x:.3f}")
        elif abs(x) > 9:  # a small whole number (1, 2) may well be a column count in words
            shown.add(str(int(x)))
    return shown


def check_steps(ex, solution):
    """Steps present, ordered as the parts are asked, shapes matching values, and each step
    that is a part (or a row of one) equal to that part's expected answer."""
    steps = solution["steps"]
    assert steps and len({s["name"] for s in steps}) == len(steps)
    order = [a["name"] for a in ex["asks"] if not a.get("choices") or a["name"] != "prediction"]
    seen = [s["part"] for s in steps if s["part"] is not None]
    firsts = sorted(set(seen), key=seen.index)
    assert firsts == [p for p in order if p in firsts] and set(firsts) == set(order) - {
        "prediction"
    }
    for s in steps:
        assert list(np.shape(np.asarray(s["value"], dtype=object))) == s["shape"], s["name"]
        assert s["title"] and isinstance(s["note"], str)
        if s["part"] is None:
            continue
        expected = np.asarray(solution[s["part"]], dtype=object)
        value = np.asarray(s["value"], dtype=object)
        if value.shape != expected.shape:  # a row of the part
            rows = [i for i in range(len(expected)) if _same(expected[i], value)]
            assert rows, s["name"]
        else:
            assert _same(expected, value), s["name"]


def _same(a, b) -> bool:
    a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    if a.shape != b.shape:
        return False
    if any(isinstance(x, str) for x in a.ravel().tolist()):
        return a.tolist() == b.tolist()
    return bool(np.allclose(a.astype(float), b.astype(float), rtol=0, atol=1e-9))


def answer_prediction(api, ex):
    first = ex["asks"][0]
    if first.get("choices") and first["name"] == "prediction":
        submit(api, ex, {"prediction": first["choices"][0]})


@pytest.mark.django_db
@pytest.mark.parametrize("kind", list(KIND_PARAMS))
def test_a_wrong_answer_gets_a_hint_then_a_right_one_none(api, kind):
    ex = create(api, kind)
    answer_prediction(api, ex)
    right = right_answers(ex)
    answers = {a["name"]: right[a["name"]] for a in ex["asks"] if a["name"] != "prediction"}
    wrong = submit(api, ex, spoiled(ex, answers))
    assert wrong["correct"] is False and wrong["solution"] is None
    first = wrong["first_wrong"]
    assert first == ex["asks"][0]["name"]
    assert wrong["hint"] == get_kind(kind).hint(first, ex["inputs"])
    assert len(wrong["hint"]) > 40
    for number in numbers_in(right[first]):
        assert number not in wrong["hint"], (number, wrong["hint"])
    assert wrong["first_wrong_step"] is not None
    good = submit(api, ex, answers)
    assert good["correct"] is True and good["hint"] is None and good["first_wrong_step"] is None
    check_steps(ex, good["solution"])
    assert not any(s["first_wrong"] for s in good["solution"]["steps"])
    fetched = api.get(f"{EXERCISES}{ex['id']}/").json()["solution"]
    # The latest attempt was right: nothing marked on the exercise's worked solution either.
    assert fetched["steps"] == good["solution"]["steps"]


@pytest.mark.django_db
@pytest.mark.parametrize("kind", list(KIND_PARAMS))
def test_attempts_run_out_and_the_first_wrong_step_is_marked(api, kind):
    ex = create(api, kind, seed=8)
    answer_prediction(api, ex)
    right = right_answers(ex)
    answers = {a["name"]: right[a["name"]] for a in ex["asks"] if a["name"] != "prediction"}
    last_part = [a["name"] for a in ex["asks"]][-1]
    wrong = spoiled(ex, answers, last_part)
    for _ in range(ex["attempts"]["max"]):
        result = submit(api, ex, wrong)
    assert result["solution"] is not None and result["first_wrong"] == last_part
    steps = result["solution"]["steps"]
    check_steps(ex, result["solution"])
    marked = [s for s in steps if s["first_wrong"]]
    assert len(marked) == 1 and marked[0]["part"] == last_part
    assert marked[0]["name"] == result["first_wrong_step"]
    # It is the first step of that part: none before it is of the part.
    before = steps[: steps.index(marked[0])]
    assert all(s["part"] != last_part for s in before)


@pytest.mark.django_db
def test_a_wrong_softmax_row_marks_that_rows_step(api):
    ex = create(api, "causal", seed=5)
    weights = np.asarray(right_answers(ex)["weights"])
    weights[2] = [0.2, 0.3, 0.5]  # the third row wrong, the first two right
    for _ in range(3):
        result = submit(api, ex, {"weights": weights.tolist()})
    assert result["first_wrong_step"] == "softmax_row_3"
    row = next(s for s in result["solution"]["steps"] if s["name"] == "softmax_row_3")
    assert row["first_wrong"] is True


@pytest.mark.django_db
def test_attention_steps_are_the_engines_own_intermediates(api):
    ex = create(api, "attention", seed=11)
    stored = Exercise.objects.get(pk=ex["id"])
    for _ in range(3):
        result = submit(api, ex, spoiled(ex, stored.solution))
    steps = {s["name"]: s for s in result["solution"]["steps"]}
    assert [s["name"] for s in result["solution"]["steps"]][:3] == [
        "raw_scores",
        "scores",
        "masked",
    ]
    Q, K, V = (np.asarray(stored.inputs[n], dtype=float) for n in "QKV")
    mask = np.asarray(stored.inputs["mask"])
    trace = engine.scaled_dot_product_attention(Q, K, V, mask=mask, return_intermediates=True)
    assert np.allclose(steps["raw_scores"]["value"], trace.raw_scores)
    assert np.allclose(steps["scores"]["value"], trace.scores)
    masked = np.asarray(steps["masked"]["value"], dtype=object)
    assert ((masked == None) == np.isneginf(trace.masked_scores)).all()  # noqa: E711
    for i in range(len(Q)):
        row = steps[f"softmax_row_{i + 1}"]
        top = trace.masked_scores[i].max()
        assert row["shift"] == pytest.approx(top)
        assert np.allclose(row["exps"], engine.shifted_exp(trace.masked_scores[i], top))
        assert row["sum"] == pytest.approx(float(np.sum(row["exps"])))
        assert np.allclose(row["value"], trace.weights[i])
    assert np.allclose(steps["output"]["value"], trace.output)


@pytest.mark.django_db
def test_multi_head_steps_are_the_engines_trace(api):
    ex = create(api, "multi_head", seed=2)
    stored = Exercise.objects.get(pk=ex["id"])
    for _ in range(4):
        result = submit(api, ex, spoiled(ex, stored.solution))
    steps = {s["name"]: s for s in result["solution"]["steps"]}
    X, Wq, Wk, Wv, Wo = (
        np.asarray(stored.inputs[n], dtype=float) for n in ("X", "W_Q", "W_K", "W_V", "W_O")
    )
    trace = engine.multi_head_attention(
        X, Wq, Wk, Wv, Wo, 2, mask=np.asarray(stored.inputs["mask"]), return_intermediates=True
    )
    for i in range(2):
        assert np.allclose(steps[f"head_{i + 1}_weights"]["value"], trace.weights[i])
        assert np.allclose(steps[f"head_{i + 1}_output"]["value"], trace.head_outputs[i])
        assert steps[f"head_{i + 1}_weights"]["part"] == f"weights_head_{i}"
        assert steps[f"head_{i + 1}_weights"]["title"].startswith(f"Head {i + 1}: ")
    assert np.allclose(steps["concat"]["value"], trace.concat)
    assert np.allclose(steps["output"]["value"], trace.output)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", list(KINDS))
def test_hand_rounded_work_gets_no_hint_and_a_wrong_part_of_it_gets_one(api, kind):
    ex = create(api, kind, seed=4)
    answer_prediction(api, ex)
    by_hand = hand_answers(kind, ex["inputs"], ex["prompt"])
    last_part = ex["asks"][-1]["name"]
    wrong = submit(api, ex, spoiled(ex, by_hand, last_part))
    assert wrong["first_wrong"] == last_part
    assert wrong["hint"] == get_kind(kind).hint(last_part, ex["inputs"])
    right = submit(api, ex, by_hand)
    assert right["correct"] is True and right["hint"] is None
    check_steps(ex, right["solution"])


def test_every_kind_has_its_own_hint_for_every_part_it_asks():
    generic = "out again from the inputs in the prompt"
    for name, kind in KINDS.items():
        ex = kind.generate(kind.normalize_params(KIND_PARAMS[name]), np.random.default_rng(0))
        for ask in ex.asks:
            if ask["name"] == "prediction":
                continue
            assert generic not in kind.hint(ask["name"], ex.inputs), (name, ask["name"])


@pytest.mark.django_db
def test_a_diagnosis_names_its_lesson_section_and_links_to_the_deck_that_has_it(api):
    from cards.models import Deck, LessonSection

    deck = Deck.objects.create(slug="attention-lesson", title="Attention")
    LessonSection.objects.create(deck=deck, key="worked-example", title="Worked", body="x")
    ex = create(api, "attention", seed=5)
    inputs = Exercise.objects.get(pk=ex["id"]).inputs
    chain = get_kind("attention").answers_under(inputs, MISTAKES["no_scale"].recipe)
    answers = {k: np.asarray(v).tolist() for k, v in chain.items()}
    result = submit(api, ex, answers)
    (entry,) = result["diagnosis"]
    assert entry["code"] == "no_scale" and entry["lesson_section"] == "worked-example"
    assert entry["lesson_url"] == "/decks/attention-lesson/lesson/#worked-example"


@pytest.mark.django_db
def test_a_section_no_lesson_has_gives_no_link(api):
    ex = create(api, "attention", seed=5)
    inputs = Exercise.objects.get(pk=ex["id"]).inputs
    chain = get_kind("attention").answers_under(inputs, MISTAKES["no_scale"].recipe)
    result = submit(api, ex, {k: np.asarray(v).tolist() for k, v in chain.items()})
    assert result["diagnosis"][0]["lesson_url"] is None


def test_every_mistake_names_a_section_of_the_lesson():
    for code, mistake in MISTAKES.items():
        assert mistake.section in LESSON_SECTIONS, code


def test_the_schema_documents_hints_steps_and_lesson_links(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()["components"]
    parts = schema["schemas"]
    assert {"name", "title", "shape", "value", "note", "first_wrong"} <= set(
        parts["WorkedStep"]["properties"]
    )
    result = parts["SubmitResult"]["properties"]
    assert "never the number" in result["hint"]["description"]
    assert "first_wrong_step" in result
    assert "lesson_url" in parts["Diagnosis"]["properties"]


@pytest.mark.django_db
def test_the_page_shows_the_inputs_once_in_the_prompt(learner):
    from django.test import Client

    from exercises.services import exercise_create

    exercise = exercise_create(owner=learner, kind="attention", params={"seed": 2})
    page = Client()
    page.force_login(learner)
    html = page.get(f"/exercises/{exercise.pk}/").content.decode()
    assert "<h2>Inputs</h2>" not in html
    assert html.count("<math") >= 3  # Q, K and V, once each, in the prompt's math
    assert html.count('<table class="data') == 0  # no second copy of them as tables


@pytest.mark.django_db
def test_a_stored_exercise_the_kind_cannot_recompute_still_gets_its_answers_as_steps(api):
    ex = create(api, "attention", seed=1)
    stored = Exercise.objects.get(pk=ex["id"])
    stored.inputs = {**stored.inputs, "Q": [[1, 2, 3]]}  # no longer fits K: not recomputable
    stored.attempts_used = stored.max_attempts
    stored.save()
    steps = api.get(f"{EXERCISES}{ex['id']}/").json()["solution"]["steps"]
    assert [s["name"] for s in steps] == ["scores", "weights", "output"]
    assert steps[1]["value"] == stored.solution["weights"]


def test_marking_needs_a_wrong_part_and_marks_one_step_at_most():
    from exercises.kinds.worked import mark_first_wrong, step

    steps = [step("a", "A", [1.0, 2.0], part="x", row=0), step("b", "B", [[1.0]], part="x")]
    assert mark_first_wrong(steps, None) is None
    assert [s["first_wrong"] for s in steps] == [False, False]
    steps = [step("a", "A", [1.0], part="x", row=0), step("b", "B", [1.0], part="x", row=1)]
    assert mark_first_wrong(steps, "x", [[1, 0]]) == "b"
    assert [s["first_wrong"] for s in steps] == [False, True]
    assert "row" not in steps[0]
    assert step("c", "C", [-np.inf, 1.0])["value"] == [None, 1.0]
