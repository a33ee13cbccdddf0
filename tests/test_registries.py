"""The exercise kinds registry (``exercises.kinds.KINDS``) is the one list of the kinds.

The catalogue, the request serializer, the OpenAPI enum, the admin's filter and the tests
read it; the docs that list kinds are checked against it here. Anything else that writes
two or more kind names down as a list, a tuple, a set or the keys of a table is a second
list that a new kind would have to find and edit: ``test_no_list_of_kinds_but_the_registry``
fails naming its file and line. What must name kinds stays: a kinds module and its test
module (tests/exercises/kinds/test_<module>.py) name the kinds of that module, and
``NAMED_ON_PURPOSE`` gives the reason of each other list kept, such as the docs' lists a
test here holds to the registry, or card tags that only share a kind's name.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from django.urls import reverse

from exercises.kinds import KINDS
from exercises.serializers import ExerciseCreateSerializer

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ("cards", "exercises", "labs", "studyapp", "benchmarks", "bin", "tests")
DOCS = ("README.md", "CONTRIBUTING.md", "docs")

# (file, text on the flagged line) -> why those kind names are written there.
NAMED_ON_PURPOSE: dict[tuple[str, str], str] = {
    ("docs/predictions.md", "| `top_key` |"): (
        "the kinds that ask a prediction, held to the kinds' predict choices by "
        "test_the_predictions_doc_names_the_kinds_that_ask_each"
    ),
    ("tests/cards/test_api_decks_cards.py", '"tags": ["shapes", "cost"]'): (
        "card tags, named like lesson sections and kinds"
    ),
    ("tests/cards/test_api_decks_cards.py", 'body["tags"] == ["cost", "shapes"]'): (
        "the same card tags, as the API sorts them"
    ),
    ("tests/web/test_a11y.py", 'for kind in ("attention", "multi_head")'): (
        "two exercises of any kinds, to fill the exercise list page"
    ),
    ("benchmarks/bench_item_analysis.py", "KINDS = ["): (
        "the kinds the synthetic attempts are spread over; any registered ones would do"
    ),
}


def python_files() -> list[Path]:
    files = []
    for top in SOURCE:
        for path in sorted((ROOT / top).rglob("*.py")):
            if "migrations" not in path.parts:
                files.append(path)
    return files


def kind_names(node: ast.AST) -> list[str] | None:
    """The kind names a literal holds, when it holds nothing else (None otherwise)."""
    if isinstance(node, ast.Dict):
        items = node.keys
    elif isinstance(node, ast.List | ast.Tuple | ast.Set):
        items = node.elts
    else:
        return None
    names = [i.value for i in items if isinstance(i, ast.Constant) and i.value in KINDS]
    return names if len(names) >= 2 and len(names) == len(items) else None


def row_table_kinds(node: ast.AST) -> set[str]:
    """The kinds a table of rows names in its first column (``[("attention", {...}), ...]``)."""
    if not isinstance(node, ast.List | ast.Tuple):
        return set()
    first = set()
    for row in node.elts:
        if not (isinstance(row, ast.Tuple | ast.List) and row.elts):
            return set()
        head = row.elts[0]
        if not (isinstance(head, ast.Constant) and head.value in KINDS):
            return set()
        first.add(head.value)
    return first


def own_kinds(path: Path) -> set[str]:
    """The kinds a kind's own module and its test module may name: those of the module."""
    if path.parent == ROOT / "exercises" / "kinds":
        module = path.stem
    elif path.parent == ROOT / "tests" / "exercises" / "kinds" and path.stem.startswith("test_"):
        module = path.stem.removeprefix("test_")
    else:
        return set()
    return {
        name for name, kind in KINDS.items() if type(kind).__module__ == f"exercises.kinds.{module}"
    }


def python_lists(path: Path) -> list[tuple[int, list[str]]]:
    found = []
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        names = kind_names(node)
        rows = row_table_kinds(node)
        if names is None and len(rows) >= len(KINDS) - 1:
            # A table over every kind, or all but one, is a list of the kinds as well.
            names = sorted(rows)
        if names is not None and not set(names) <= own_kinds(path):
            found.append((node.lineno, names))
    return found


TICKED = re.compile(r"`([a-z0-9_]+)`")
# Backticked names joined by commas, "and", "or": "(`attention`, `projection` and `cost`)".
RUN = re.compile(r"`[a-z0-9_]+`(?:(?:,\s*|\s+and\s+|\s+or\s+|,\s*and\s+|,\s*or\s+)`[a-z0-9_]+`)+")


def doc_files() -> list[Path]:
    files = []
    for top in DOCS:
        path = ROOT / top
        files.extend(sorted(path.rglob("*.md")) if path.is_dir() else [path])
    return files


def doc_lists(path: Path) -> list[tuple[int, list[str]]]:
    text = path.read_text()
    found = []
    for run in RUN.finditer(text):
        names = TICKED.findall(run.group())
        if len(names) >= 2 and all(n in KINDS for n in names):
            found.append((text.count("\n", 0, run.start()) + 1, names))
    return found


def written_lists() -> list[tuple[str, int, str, list[str]]]:
    """Every list of kind names outside the registry: (file, line, its text, the names)."""
    out = []
    for path in python_files():
        lines = path.read_text().splitlines()
        for lineno, names in python_lists(path):
            out.append((str(path.relative_to(ROOT)), lineno, lines[lineno - 1], names))
    for path in doc_files():
        lines = path.read_text().splitlines()
        for lineno, names in doc_lists(path):
            out.append((str(path.relative_to(ROOT)), lineno, lines[lineno - 1], names))
    return out


def allowed(file: str, line: str) -> tuple[str, str] | None:
    for key in NAMED_ON_PURPOSE:
        if key[0] == file and key[1] in line:
            return key
    return None


def test_no_list_of_kinds_but_the_registry():
    problems = []
    used = set()
    for file, lineno, line, names in written_lists():
        key = allowed(file, line)
        if key is None:
            problems.append(f"{file}:{lineno}: {', '.join(names)}")
        else:
            used.add(key)
    assert not problems, (
        "Kinds written down as a list outside exercises.kinds (read KINDS instead, keep a "
        "kind's cases in tests/exercises/kinds/, or say in NAMED_ON_PURPOSE why these are "
        "named):\n" + "\n".join(problems)
    )
    stale = set(NAMED_ON_PURPOSE) - used
    assert not stale, f"NAMED_ON_PURPOSE entries that match nothing any more: {sorted(stale)}"


# --- The docs and the schema read the registry ------------------------------------------


def prediction_rows() -> dict[str, set[str]]:
    """The table of docs/predictions.md: each ``predict`` choice and the kinds it names."""
    text = (ROOT / "docs" / "predictions.md").read_text()
    table = text.split("| kind | `predict` |", 1)[1].split("\n\n", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in table.splitlines()[2:]:
        cells = line.strip().strip("|").split("|")
        (choice,) = TICKED.findall(cells[1])
        rows[choice] = set(TICKED.findall(cells[0]))
    return rows


def test_the_predictions_doc_names_the_kinds_that_ask_each():
    asked: dict[str, set[str]] = {}
    for name, kind in KINDS.items():
        spec = kind.params.get("predict")
        for choice in spec.choices if spec and spec.choices else ():
            if choice != "none":
                asked.setdefault(choice, set()).add(name)
    assert asked, "no kind asks a prediction: the table has nothing to hold"
    assert prediction_rows() == asked


def test_the_schema_and_the_request_take_the_registered_kinds_in_order():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    body = components["ExerciseCreateRequest"]
    enum = components[body["properties"]["kind"]["$ref"].rsplit("/", 1)[1]]["enum"]
    assert enum == list(KINDS)
    assert [branch["title"] for branch in body["oneOf"]] == list(KINDS)
    assert list(ExerciseCreateSerializer().fields["kind"].choices) == list(KINDS)


def test_the_catalogue_lists_the_registered_kinds_in_order(api):
    response = api.get("/api/v1/exercises/kinds/")
    assert response.status_code == 200
    assert [entry["kind"] for entry in response.json()["results"]] == list(KINDS)


def test_the_admin_filters_exercises_by_the_registered_kinds(admin_client):
    page = admin_client.get(reverse("admin:exercises_exercise_changelist"))
    assert page.status_code == 200
    choices = [c["display"] for c in page.context["cl"].filter_specs[0].choices(page.context["cl"])]
    assert choices == ["All", *(kind.title for kind in KINDS.values())]
