"""Geometry of the memory charts (SVG drawn by ``templates/cards/_memory_charts.html``): pure.

Both charts are read without colour: the calibration's observed points are circles on a
solid line against a dashed diagonal; each policy's workload line has its own dash
pattern and its name written at its end. The templates stroke with ``currentColor``,
so a dark theme draws them in its own text colour.
"""

from __future__ import annotations

from typing import Any

WIDTH, HEIGHT = 560, 300
LEFT, RIGHT, TOP, BOTTOM = 48, 92, 14, 40
LABEL_GAP = 13
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
DASHES = {"ladder": "", "0.8": "2 3", "0.9": "6 3", "0.95": "10 3 2 3"}


def _x(fraction: float) -> float:
    return round(LEFT + fraction * PLOT_W, 1)


def _y(fraction: float) -> float:
    return round(TOP + (1 - fraction) * PLOT_H, 1)


def calibration_chart(calibration: dict[str, Any]) -> dict[str, Any]:
    """Predicted (x) against observed (y) recall, both 0 to 1, one point per bin."""
    points = [
        {
            "x": _x(b["predicted"]),
            "y": _y(b["observed"]),
            "r": 2.5 if b["count"] < 20 else 4,
            **b,
        }
        for b in calibration["bins"]
    ]
    ticks = [{"value": f"{v / 10:.1f}", "x": _x(v / 10), "y": _y(v / 10)} for v in range(0, 11, 2)]
    return {
        "points": points,
        "line": " ".join(f"{p['x']},{p['y']}" for p in points),
        "diagonal": (_x(0), _y(0), _x(1), _y(1)),
        "ticks": ticks,
    }


def _label(entry: dict[str, Any]) -> str:
    if entry["policy"] == "ladder":
        return "ladder"
    return f"FSRS {entry['desired_retention']:.2f}"


def _weekly(daily: list[float]) -> list[float]:
    return [sum(daily[i : i + 7]) / len(daily[i : i + 7]) for i in range(0, len(daily), 7)]


def workload_chart(simulation: list[dict[str, Any]]) -> dict[str, Any]:
    """Reviews per day (weekly means) over the simulated days, one line per policy."""
    weeks = [_weekly(entry["daily_reviews"]) for entry in simulation]
    top = max((max(w) for w in weeks if w), default=0.0) or 1.0
    lines = []
    for entry, weekly in zip(simulation, weeks, strict=True):
        n = max(len(weekly) - 1, 1)
        coords = [(_x(i / n), _y(v / top)) for i, v in enumerate(weekly)]
        key = "ladder" if entry["policy"] == "ladder" else f"{entry['desired_retention']:g}"
        lines.append(
            {
                "label": _label(entry),
                "dash": DASHES.get(key, ""),
                "points": " ".join(f"{x},{y}" for x, y in coords),
                "end": coords[-1] if coords else (_x(1), _y(0)),
                **entry,
            }
        )
    _spread_labels(lines)
    y_ticks = [{"value": f"{top * f:.1f}", "y": _y(f)} for f in (0, 0.5, 1)]
    x_ticks = [{"value": str(day), "x": _x(day / 365)} for day in (0, 90, 180, 270, 365)]
    return {"lines": lines, "y_ticks": y_ticks, "x_ticks": x_ticks}


def _spread_labels(lines: list[dict[str, Any]]) -> None:
    """Each line's name at its end, moved apart so that no two overlap (``LABEL_GAP``),
    and all moved up together if the lowest would fall below the plot."""
    ordered = sorted(lines, key=lambda line: line["end"][1])
    ys: list[float] = []
    for line in ordered:
        ys.append(max(line["end"][1], ys[-1] + LABEL_GAP) if ys else line["end"][1])
    overflow = max((ys[-1] - (TOP + PLOT_H)) if ys else 0.0, 0.0)
    for line, y in zip(ordered, ys, strict=True):
        line["label_y"] = round(y - overflow + 4, 1)


def charts(figures: dict[str, Any]) -> dict[str, Any]:
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "plot": {"left": LEFT, "top": TOP, "right": LEFT + PLOT_W, "bottom": TOP + PLOT_H},
        "calibration": calibration_chart(figures["calibration"]),
        "workload": workload_chart(figures["simulation"]),
    }
