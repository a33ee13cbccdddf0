"""What holds for every registered kind (each kind's own tests: tests/exercises/kinds/)."""

import json

import numpy as np
import pytest

from exercises.checking import MISTAKES
from exercises.kinds import FIRST, KINDS, LAST, ParamError, UnknownKindError, get_kind, kind_modules
from tests.exercises.kind_cases import cases_of, kind_cases

# The kinds with a scale switch, whose width (d_k, or d_head per head) may be 1 only without it.
SCALED = [name for name, kind in KINDS.items() if "scale" in kind.params]


def test_unknown_kind_is_a_key_error_naming_the_kinds():
    with pytest.raises(UnknownKindError) as err:
        get_kind("nope")
    assert isinstance(err.value, KeyError)
    assert all(name in str(err.value) for name in KINDS)


def test_the_catalogue_follows_the_order_of_the_kinds_modules():
    # The catalogue's and the OpenAPI enum's order is the modules' (exercises/kinds/__init__.py):
    # its first ones, any other by name, its last ones; each module's kinds in the order written.
    modules = kind_modules()
    assert modules[: len(FIRST)] == list(FIRST) and modules[len(modules) - len(LAST) :] == list(
        LAST
    )
    order = [modules.index(type(kind).__module__.rpartition(".")[2]) for kind in KINDS.values()]
    assert order == sorted(order)
    assert [type(kind).__module__ for kind in KINDS.values()][-1] == f"exercises.kinds.{LAST[-1]}"


def test_every_registered_kind_has_its_cases():
    # Each kind's cases live beside its tests, in tests/exercises/kinds/test_<its module>.py.
    missing = [
        f"{name} (tests/exercises/kinds/test_{type(kind).__module__.rpartition('.')[2]}.py)"
        for name, kind in KINDS.items()
        if name not in kind_cases()
    ]
    assert not missing, f"No CASES for: {', '.join(missing)}"
    assert list(kind_cases()) == list(KINDS)
    with pytest.raises(LookupError, match="tests/exercises/kinds/"):
        cases_of("nope")


@pytest.mark.parametrize("name", list(KINDS))
def test_every_ask_has_a_solution_of_its_shape_and_everything_is_plain_json(name, generate):
    kind, g = generate(name)
    assert [a["name"] for a in g.asks] == list(g.solution)
    for ask in g.asks:
        assert list(np.shape(g.solution[ask["name"]])) == ask["shape"]
    json.dumps({"inputs": g.inputs, "solution": g.solution, "asks": g.asks, "prompt": g.prompt})
    assert "$" in g.prompt
    assert set(kind.mistakes) <= set(MISTAKES)
    assert 1 <= g.max_attempts <= 5


@pytest.mark.parametrize("name", list(KINDS))
def test_same_params_and_seed_give_the_same_variant(name, generate):
    _, a = generate(name, seed=123)
    _, b = generate(name, seed=123)
    assert (a.inputs, a.solution, a.prompt) == (b.inputs, b.solution, b.prompt)


@pytest.mark.parametrize("name", [n for n, cases in kind_cases().items() if cases.seeds_vary])
def test_other_seeds_give_other_inputs(name, generate):
    variants = {json.dumps(generate(name, seed=s)[1].inputs) for s in range(5)}
    assert len(variants) > 1


@pytest.mark.parametrize("name", list(KINDS))
def test_defaults_are_filled_and_the_seed_kept(name):
    kind = get_kind(name)
    params = kind.normalize_params({"seed": 5})
    assert params["seed"] == 5
    assert set(params) == set(kind.params) | {"seed"}
    assert "seed" not in kind.normalize_params({})


@pytest.mark.parametrize(
    "raw, field",
    [
        ({"bogus": 1}, "bogus"),
        ({"n": True}, "n"),
        ({"n": "3"}, "n"),
        ({"n": 2.5}, "n"),
        ({"n": 1}, "n"),
        ({"n": 9}, "n"),
        ({"mask": "diagonal"}, "mask"),
        ({"scale": 1}, "scale"),
        ({"seed": -1}, "seed"),
        ({"seed": 2**63}, "seed"),
        ({"seed": True}, "seed"),
    ],
)
def test_bad_params_name_the_field(raw, field):
    with pytest.raises(ParamError) as err:
        get_kind("attention").normalize_params(raw)
    assert err.value.field == field
    assert isinstance(err.value, ValueError)


def test_params_must_be_an_object():
    with pytest.raises(ParamError) as err:
        get_kind("attention").normalize_params([1, 2])
    assert err.value.field == "params"


@pytest.mark.parametrize("name", list(KINDS))
def test_largest_sizes_generate(name):
    kind = get_kind(name)
    big = {p: s.max for p, s in kind.params.items() if s.type == "int"}
    if name == "positional_encoding":
        big["d_model"] = 64
    g = kind.generate(kind.normalize_params(big), np.random.default_rng(3))
    for ask in g.asks:
        assert list(np.shape(g.solution[ask["name"]])) == ask["shape"]


@pytest.mark.parametrize(
    "name, params, field",
    [
        ("attention", {"n": 2, "mask": "padding"}, "n"),
        ("shapes", {"n": 4, "d_head": 4, "vary": False}, "n"),
    ],
)
def test_parameters_that_cannot_test_what_they_ask_are_refused(name, params, field):
    with pytest.raises(ParamError) as err:
        get_kind(name).normalize_params(params)
    assert err.value.field == field


def _width(name: str) -> tuple[str, dict]:
    kind = get_kind(name)
    key = "d_head" if "d_head" in kind.params else "d_k"
    # A preset of fixed sizes takes no width: the random one does.
    extra = {"preset": "random"} if "preset" in kind.params else {}
    return key, extra


@pytest.mark.parametrize("name", SCALED)
def test_width_one_is_refused_with_scaling_and_fine_without(name):
    key, extra = _width(name)
    with pytest.raises(ParamError) as err:
        get_kind(name).normalize_params({key: 1, **extra})
    assert err.value.field == key
    params = get_kind(name).normalize_params({key: 1, "scale": False, **extra})
    assert params[key] == 1
