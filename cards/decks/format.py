"""Deck files as text: read YAML or JSON into a document, and write a document back.

Reading refuses what a content author would regret: a key given twice in one
mapping (the parser keeps the last without a word), YAML aliases (a few hundred
bytes of nested aliases expand to billions of nodes, and an alias inside its own
anchor never ends), and JSON nested deeper than ``MAX_DEPTH`` (libyaml stops YAML
at 1,000 levels itself).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import yaml

from studyapp.common.jsonscan import json_depth

FORMAT_VERSION = 1
# A deck nests a handful of levels (document, cards, a card, its lists); far deeper
# JSON would only make the parser recurse until Python stops it.
MAX_DEPTH = 32


class DeckFileError(ValueError):
    """The file cannot be imported; ``errors`` names every entry and field at fault."""

    def __init__(self, errors: list[str]):
        self.errors = list(errors)
        super().__init__("\n".join(self.errors))


def is_source(data: Any) -> bool:
    """Whether ``data`` is something to read (a path, text, bytes, a stream), not a document."""
    return isinstance(data, (str, bytes, os.PathLike)) or hasattr(data, "read")


def _at(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _yaml_duplicates(node: yaml.Node, path: str = "") -> list[str]:
    """Keys given twice in one mapping of a composed YAML document, named by path and lines.

    PyYAML keeps the last value without a word; a content author would lose the first.
    """
    errors: list[str] = []
    if isinstance(node, yaml.MappingNode):
        first_line: dict[tuple[str, str], int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
            if isinstance(key_node, yaml.ScalarNode) and key != "<<":
                line = key_node.start_mark.line + 1
                first = first_line.get((key_node.tag, key))
                if first is None:
                    first_line[(key_node.tag, key)] = line
                else:
                    where = _at(path, key)
                    errors.append(f"{where}: given twice (lines {first} and {line}); keep one")
            errors += _yaml_duplicates(value_node, _at(path, key))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            errors += _yaml_duplicates(item, f"{path}[{index}]")
    return errors


class _JsonObject(dict):
    """A JSON object that remembers the names it was given more than once."""

    repeated: tuple[str, ...] = ()


def _json_object(pairs: list[tuple[str, Any]]) -> dict:
    obj = _JsonObject(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        repeated: list[str] = []
        for key, _ in pairs:
            if key in seen:
                repeated.append(key)
            seen.add(key)
        obj.repeated = tuple(dict.fromkeys(repeated))
    return obj


def _json_duplicates(value: Any, path: str = "") -> list[str]:
    errors: list[str] = []
    if isinstance(value, dict):
        errors += [
            f"{_at(path, key)}: given more than once; keep one"
            for key in getattr(value, "repeated", ())
        ]
        for key, item in value.items():
            errors += _json_duplicates(item, _at(path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            errors += _json_duplicates(item, f"{path}[{index}]")
    return errors


def _yaml_aliases(root: yaml.Node) -> list[str]:
    """The first alias in a composed document, named by path and by what it repeats.

    An alias is the same node object reached twice, so one walk that never enters a
    node twice finds it: in time linear in the text, however far the aliases would
    expand, and without looping on an alias inside its own anchor.
    """
    seen: dict[int, yaml.Node] = {}
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            mark = node.start_mark
            return [
                "YAML anchors and aliases are not allowed in deck files: "
                f"{path or 'the document'} is an alias of the content anchored at line "
                f"{mark.line + 1} column {mark.column + 1}; write the content out in full"
            ]
        seen[id(node)] = node
        if isinstance(node, yaml.MappingNode):
            children = [
                (value, _at(path, key.value if isinstance(key, yaml.ScalarNode) else "?"))
                for key, value in node.value
            ] + [(key, path) for key, _ in node.value if not isinstance(key, yaml.ScalarNode)]
        elif isinstance(node, yaml.SequenceNode):
            children = [(item, f"{path}[{index}]") for index, item in enumerate(node.value)]
        else:
            children = []
        stack.extend(reversed(children))
    return []


def _syntax_error(exc: yaml.YAMLError) -> DeckFileError:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1} column {mark.column + 1}: " if mark else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return DeckFileError([f"not valid YAML: {where}{problem}"])


_EMPTY = "the file is empty; expected a mapping with format, deck and cards"


def deck_load(source: Any, *, name: str | None = None) -> Any:
    """Parse a deck file from a path, text, bytes or an open stream.

    JSON is chosen by a ``.json`` name, YAML by ``.yaml``/``.yml``; otherwise a
    document starting with ``{`` or ``[`` is read as JSON and anything else as YAML.
    Raises ``DeckFileError`` with the line and column of a syntax error, for an
    empty file, and for a key given twice in one mapping (named by entry and field).
    A UTF-8 byte order mark, as some editors write, is skipped.
    """
    text, name = _deck_text(source, name)
    suffix = Path(str(name)).suffix.lower() if name else ""
    is_json = suffix == ".json" or (
        suffix not in {".yaml", ".yml"} and text.lstrip()[:1] in {"{", "["}
    )
    return _json_load(text) if is_json else _yaml_load(text)


def _deck_text(source: Any, name: str | None) -> tuple[str, str | None]:
    """The text of a deck file without a byte order mark, and its name when known."""
    if isinstance(source, os.PathLike):
        path = Path(source)
        name = name or path.name
        text = path.read_text(encoding="utf-8-sig")
    elif isinstance(source, bytes):
        text = source.decode("utf-8-sig")
    elif isinstance(source, str):
        text = source
    elif hasattr(source, "read"):
        name = name or getattr(source, "name", None)
        raw = source.read()
        text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
    else:
        raise DeckFileError([f"expected a deck file, got {type(source).__name__}"])
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise DeckFileError([_EMPTY])
    return text, name


def _json_load(text: str) -> Any:
    depth = json_depth(text.encode("utf-8", "surrogatepass"))
    if depth > MAX_DEPTH:
        raise DeckFileError(
            [
                f"not valid JSON for a deck: arrays and objects nest {depth} levels deep; "
                f"a deck file nests at most {MAX_DEPTH}"
            ]
        )
    try:
        document = json.loads(text, object_pairs_hook=_json_object)
    except json.JSONDecodeError as exc:
        raise DeckFileError(
            [f"not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"]
        ) from exc
    duplicates = _json_duplicates(document)
    if duplicates:
        raise DeckFileError(duplicates)
    return document


def _yaml_load(text: str) -> Any:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:  # only comments or blank lines
            raise DeckFileError([_EMPTY])
        aliases = _yaml_aliases(node)
        if aliases:
            raise DeckFileError(aliases)
        duplicates = _yaml_duplicates(node)
        if duplicates:
            raise DeckFileError(duplicates)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise _syntax_error(exc) from exc
    finally:
        loader.dispose()


class _BlockDumper(yaml.SafeDumper):
    """Multi-line text as YAML block literals, so Markdown stays readable in diffs."""


def _str_representer(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str_representer)


def deck_dump(document: Mapping, *, fmt: str = "yaml", stream: IO[str] | None = None) -> str:
    """Serialise a deck document as ``yaml`` or ``json`` text (and write it to ``stream``)."""
    if fmt == "json":
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    elif fmt == "yaml":
        text = yaml.dump(
            dict(document),
            Dumper=_BlockDumper,
            sort_keys=False,
            allow_unicode=True,
            width=100,
        )
    else:
        raise ValueError(f"format: expected yaml or json, got {fmt!r}")
    if stream is not None:
        stream.write(text)
    return text
