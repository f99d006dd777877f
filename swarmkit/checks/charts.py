"""Inline SVG charts for the HTML report: drawn here in Python, so the page needs no script and no CDN.

Every drawn value is a ``rect`` of class ``bar`` carrying its series, label and value as data attributes
(a test or a reader's tool counts them) and a ``title`` (the browser's tooltip). Pure: text in, text out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 720
LABEL_WIDTH = 170
VALUE_WIDTH = 110  # room right of the longest bar for its number
BAR_HEIGHT = 16
BAR_GAP = 3
GROUP_GAP = 12
LEGEND_HEIGHT = 26


@dataclass(frozen=True)
class Series:
    name: str
    values: tuple[float | None, ...]  # one per label; None: not measured
    colour: str


def number(value: float) -> str:
    """A figure as a reader wants it: no trailing zeros, thousands grouped."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}"


def _legend(series: Sequence[Series]) -> str:
    items = []
    for index, one in enumerate(series):
        x = LABEL_WIDTH + index * 170
        items.append(
            f'<rect x="{x}" y="4" width="12" height="12" fill="{one.colour}"/>'
            f'<text x="{x + 18}" y="15" class="legend">{escape(one.name)}</text>'
        )
    return "".join(items)


def _bar(series: Series, label: str, value: float | None, y: float, scale: float, unit: str) -> str:
    """One bar and its figure; an unmeasured value is written, not drawn."""
    text_y = y + BAR_HEIGHT - 4
    if value is None:
        return f'<text x="{LABEL_WIDTH + 4}" y="{text_y}" class="missing">{escape(series.name)}: not measured</text>'
    width = max(1.0, value * scale)
    shown = f"{number(value)} {unit}"
    data = f'data-series="{escape(series.name)}" data-label="{escape(label)}" data-value="{value:g}"'
    return (
        f'<rect class="bar" {data} x="{LABEL_WIDTH}" y="{y}" width="{width:.1f}" height="{BAR_HEIGHT}" fill="{series.colour}">'
        f"<title>{escape(label)} {escape(series.name)}: {escape(shown)}</title></rect>"
        f'<text x="{LABEL_WIDTH + width + 6:.1f}" y="{text_y}" class="value">{escape(shown)}</text>'
    )


def bar_chart(title: str, labels: Sequence[str], series: Sequence[Series], unit: str) -> str:
    """Horizontal bars, one group per label and one bar per series in it, on one scale."""
    measured = [v for one in series for v in one.values if v is not None]
    scale = (WIDTH - LABEL_WIDTH - VALUE_WIDTH) / max(measured) if measured and max(measured) > 0 else 0.0
    group = len(series) * (BAR_HEIGHT + BAR_GAP) + GROUP_GAP
    height = LEGEND_HEIGHT + group * len(labels)
    parts = [_legend(series)]
    for row, label in enumerate(labels):
        top = LEGEND_HEIGHT + row * group
        parts.append(f'<text x="0" y="{top + BAR_HEIGHT - 4}" class="label">{escape(label)}</text>')
        for index, one in enumerate(series):
            parts.append(_bar(one, label, one.values[row], top + index * (BAR_HEIGHT + BAR_GAP), scale, unit))
    return (
        f'<svg class="chart" role="img" aria-label="{escape(title)}" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>'
    )
