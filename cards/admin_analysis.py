"""Staff screens for content quality: item analysis, learners' reports, Anki export."""

from __future__ import annotations

import csv
import json
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from exercises.models import Attempt
from studyapp.common.admin import ReadOnlyAdmin

from . import anki, item_analysis, lapses, services
from .models import Card, CardAnalysis, Deck, Report, Tag


@admin.register(Report)
class ReportAdmin(admin.ModelAdmin):
    list_display = ["created_at", "card_link", "learner", "short_text", "exercise", "resolved"]
    list_filter = ["resolved", "card__deck", "card__kind"]
    list_select_related = ["card", "learner"]
    search_fields = ["text", "learner__username", "card__prompt"]
    readonly_fields = ["learner", "card", "exercise", "text", "created_at", "learner_answer"]
    fields = ["card", "learner", "exercise", "text", "learner_answer", "created_at", "resolved"]
    actions = ["mark_resolved", "mark_open"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False

    @admin.display(description="Card", ordering="card")
    def card_link(self, report):
        url = reverse("admin:cards_card_change", args=[report.card_id])
        return format_html('<a href="{}">{}</a>', url, str(report.card)[:80])

    @admin.display(description="Report")
    def short_text(self, report):
        return report.text[:120] + ("…" if len(report.text) > 120 else "")

    @admin.display(description="Learner's answer")
    def learner_answer(self, report):
        if report.exercise_id is None:
            return "\N{EN DASH}"
        attempt = Attempt.objects.filter(exercise_id=report.exercise_id).order_by("-number").first()
        if attempt is None:
            return "No answer submitted."
        return format_html("<pre>{}</pre>", _pretty(attempt.answers))

    @admin.action(description="Mark selected reports resolved")
    def mark_resolved(self, request, queryset):
        count = services.report_set_resolved(
            report_ids=list(queryset.values_list("id", flat=True)), resolved=True
        )
        self.message_user(request, f"Marked {count} report(s) resolved.", messages.SUCCESS)

    @admin.action(description="Reopen selected reports")
    def mark_open(self, request, queryset):
        count = services.report_set_resolved(
            report_ids=list(queryset.values_list("id", flat=True)), resolved=False
        )
        self.message_user(request, f"Reopened {count} report(s).", messages.SUCCESS)


def _pretty(value) -> str:
    return json.dumps(value, indent=1)


@admin.action(description="Export the selected deck(s) as an Anki package (.apkg)")
def export_apkg(modeladmin, request, queryset):
    decks = list(queryset[:2])
    if len(decks) != 1:
        modeladmin.message_user(request, "Select exactly one deck to export.", messages.WARNING)
        return None
    deck = decks[0]
    response = HttpResponse(anki.deck_apkg(deck=deck), content_type="application/apkg")
    response["Content-Disposition"] = f'attachment; filename="{deck.slug}.apkg"'
    return response


CSV_HEADINGS = [
    "card",
    "deck",
    "kind",
    "prompt",
    "active",
    "learners",
    "reviews",
    "first_reviews",
    "first_pass_rate",
    "later_reviews",
    "later_pass_rate",
    "lapses",
    "leeches",
    "open_reports",
]
# A cell a spreadsheet would read as a formula (CSV injection) is written as text.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(text: str) -> str:
    return "'" + text if text.startswith(_FORMULA_START) else text


def _rate(rate: float | None) -> str:
    return "" if rate is None else f"{rate:.4f}"


def _filters(request) -> tuple[str | None, str | None, str | None, str]:
    """The deck, kind, tag and order of the item analysis's query string; an unknown kind
    or order is left out (the page shows all kinds, in the default order)."""
    params = request.GET
    deck = params.get("deck") or None
    kind = params.get("kind") if params.get("kind") in Card.Kind.values else None
    tag = params.get("tag") or None
    order = params.get("o", item_analysis.DEFAULT_ORDER)
    if order.lstrip("-") not in item_analysis.COLUMNS:
        order = item_analysis.DEFAULT_ORDER
    return deck, kind, tag, order


@admin.register(CardAnalysis)
class ItemAnalysisAdmin(ReadOnlyAdmin):
    """Per card and per exercise kind: where learners fail, and why.

    Read-only pages drawn from ``cards.item_analysis``: one SQL statement per page
    whatever the number of learners; the cards' table downloads as CSV.
    """

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_staff

    def get_urls(self):
        return [
            path(
                "kinds/",
                self.admin_site.admin_view(self.kinds_view),
                name="cards_cardanalysis_kinds",
            ),
            path(
                "csv/",
                self.admin_site.admin_view(self.csv_view),
                name="cards_cardanalysis_csv",
            ),
            *super().get_urls(),
        ]

    def changelist_view(self, request, extra_context=None):
        deck, kind, tag, order = _filters(request)
        try:
            page = max(int(request.GET.get("p", "1")), 1)
        except ValueError:
            page = 1
        per_page = item_analysis.PAGE_SIZE
        rows, total = item_analysis.card_analysis(
            deck=deck, kind=kind, tag=tag, order=order, limit=per_page, offset=(page - 1) * per_page
        )
        base = {k: v for k, v in {"deck": deck, "kind": kind, "tag": tag}.items() if v}

        def sort_url(column):
            flipped = column if order == f"-{column}" else f"-{column}"
            return "?" + urlencode({**base, "o": flipped})

        def page_url(number):
            return "?" + urlencode({**base, "o": order, "p": number})

        pages = max((total + per_page - 1) // per_page, 1)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Item analysis: cards",
            "rows": rows,
            "total": total,
            "columns": [
                (name, label, sort_url(name), order.lstrip("-") == name, order.startswith("-"))
                for name, label in item_analysis.COLUMNS.items()
            ],
            "decks": list(Deck.objects.order_by("title").values_list("slug", "title")),
            "kinds": Card.Kind.choices,
            "tags": list(Tag.objects.order_by("name").values_list("name", flat=True)),
            "current": base,
            "page": page,
            "pages": pages,
            "prev_url": page_url(page - 1) if page > 1 else None,
            "next_url": page_url(page + 1) if page < pages else None,
            "csv_url": reverse("admin:cards_cardanalysis_csv")
            + "?"
            + urlencode({**base, "o": order}),
            "leech_lapses": lapses.leech_lapses(),
        }
        return TemplateResponse(request, "admin/cards/item_analysis.html", context)

    def csv_view(self, request):
        """Every card matching the page's filters, in its order, as CSV for a spreadsheet."""
        deck, kind, tag, order = _filters(request)
        rows, _ = item_analysis.card_analysis(
            deck=deck, kind=kind, tag=tag, order=order, limit=None
        )
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="item-analysis.csv"'
        writer = csv.writer(response)
        writer.writerow(CSV_HEADINGS)
        for row in rows:
            writer.writerow(
                [
                    row.card,
                    _cell(row.deck),
                    row.kind,
                    _cell(row.prompt),
                    int(row.is_active),
                    row.learners,
                    row.reviews,
                    row.first_reviews,
                    _rate(row.first_pass_rate),
                    row.later_reviews,
                    _rate(row.later_pass_rate),
                    row.lapses,
                    row.leeches,
                    row.open_reports,
                ]
            )
        return response

    def kinds_view(self, request):
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Item analysis: exercise kinds",
            "kinds": item_analysis.exercise_kind_analysis(),
        }
        return TemplateResponse(request, "admin/cards/item_analysis_kinds.html", context)
