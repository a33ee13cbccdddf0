"""One numbering for every name a learner reads: heads, rows, columns, tokens and inputs
count from 1 in the prompts, the answer grids, the feedback and the diagnosis. API names
and indices may count from 0 (``weights_head_0``, ``wrong_cells``,
``inputs.highlighted``); the schema says which, and each ask's ``label`` gives the words."""

import re

import numpy as np
import pytest
from django.test import Client

from exercises.cells import cell_words, part_words
from exercises.checking import MISTAKES
from exercises.kinds import get_kind
from exercises.services import exercise_create
from tests.exercises.test_diagnosis_properties import interleaved_by_hand
from tests.exercises.test_exercise_pages import submit

EXERCISES = "/api/v1/exercises/"


@pytest.mark.parametrize(
    "name, words",
    [
        ("weights_head_0", "weights of head 1"),
        ("weights_head_3", "weights of head 4"),
        ("weights", "weights"),
        ("pe_170", "pe_170"),  # a position, not an index
        ("output", "output"),
    ],
)
def test_a_part_reads_as_the_learner_counts(name, words):
    assert part_words(name) == words
    assert cell_words(name, (0, 1)) == f"{words} row 1 column 2"


def visible_text(html: str) -> str:
    """What a page shows: the text between tags, and the accessible names of fields."""
    shown = re.sub(r"<[^>]*>", " ", html)
    labels = " ".join(re.findall(r'aria-label="([^"]*)"', html))
    return shown + " " + labels


@pytest.mark.django_db
def test_the_multi_head_page_counts_heads_from_one_everywhere_a_learner_reads(learner):
    page = Client()
    page.force_login(learner)
    params = {"heads": 2, "d_head": 3, "n": 2, "mask": "causal", "seed": 23766}
    exercise = exercise_create(owner=learner, kind="multi_head", params=params)
    answers = interleaved_by_hand(exercise.inputs)
    assert submit(page, exercise, answers).status_code == 302
    html = page.get(f"/exercises/{exercise.pk}/").content.decode()
    text = visible_text(html)
    assert "weights_head" not in text  # the API's names stay in the fields' names only
    assert "<legend>weights of head 1</legend>" in html
    assert "<legend>weights of head 2</legend>" in html
    assert 'aria-label="weights of head 2 row 2 column 1"' in html
    assert re.search(r"First wrong step: <a [^>]*>weights of head 1</a>", html)
    assert MISTAKES["heads_interleaved"].text.replace("'", "&#x27;") in html
    assert 'name="answer-weights_head_0-0-0"' in html  # the API name, unchanged


@pytest.mark.django_db
def test_each_ask_carries_the_learners_words_and_the_schema_says_what_counts_from_0(api):
    params = {"heads": 2, "d_head": 2, "seed": 1}
    ex = api.post(EXERCISES, {"kind": "multi_head", "params": params}, format="json").json()
    assert [(a["name"], a["label"]) for a in ex["asks"]] == [
        ("weights_head_0", "weights of head 1"),
        ("weights_head_1", "weights of head 2"),
        ("output", "output"),
    ]
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    parts = schema["components"]["schemas"]
    assert "counted from 0" in parts["PartResult"]["properties"]["wrong_cells"]["description"]
    assert "`highlighted`" in parts["Exercise"]["properties"]["inputs"]["description"]
    assert "counts from 0" in parts["Ask"]["properties"]["name"]["description"]
    assert "counting from 1" in parts["Ask"]["properties"]["label"]["description"]


def test_a_degenerate_head_is_named_as_the_prompt_counts_it():
    kind = get_kind("multi_head")
    g = kind.generate(kind.normalize_params({"heads": 2, "d_head": 2}), np.random.default_rng(0))
    n = len(g.inputs["X"])
    g.inputs["mask"] = [[False] * n for _ in range(n)]
    g.solution["weights_head_0"] = [[1 / n] * n for _ in range(n)]  # uniform: nothing to do
    assert kind.degenerate(g) == "head 1: every row of the weights is uniform"
