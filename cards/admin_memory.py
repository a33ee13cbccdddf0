"""Staff screen: does the ladder fit the memory of a deck's learners (``cards.services.memory_deck``).

Registered on ``MemoryParameters``: its list shows each learner's stored fit, read-only;
``decks/`` lists the decks and ``decks/<slug>/`` draws one deck's figures and charts.
"""

from __future__ import annotations

from django.contrib import admin
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path
from django.utils import timezone

from studyapp.common.admin import ReadOnlyAdmin

from .models import Deck, MemoryParameters
from .services.memory_deck import deck_page_context


@admin.register(MemoryParameters)
class MemoryParametersAdmin(ReadOnlyAdmin):
    list_display = ["learner", "fitted", "reviews_used", "fitted_at"]
    list_filter = ["fitted"]
    search_fields = ["learner__username"]
    readonly_fields = ["learner", "fitted", "reviews_used", "fitted_at", "parameters", "history"]
    change_list_template = "admin/cards/memory_parameters_list.html"

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_staff

    def get_urls(self):
        return [
            path(
                "decks/",
                self.admin_site.admin_view(self.decks_view),
                name="cards_memoryparameters_decks",
            ),
            path(
                "decks/<slug:slug>/",
                self.admin_site.admin_view(self.deck_view),
                name="cards_memoryparameters_deck",
            ),
            *super().get_urls(),
        ]

    def decks_view(self, request):
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Memory: decks",
            "decks": list(Deck.objects.order_by("title").values_list("slug", "title")),
        }
        return TemplateResponse(request, "admin/cards/memory_decks.html", context)

    def deck_view(self, request, slug):
        deck = get_object_or_404(Deck, slug=slug)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Memory: {deck.title}",
            "deck": deck,
            **deck_page_context(deck=deck, today=timezone.localdate()),
        }
        return TemplateResponse(request, "admin/cards/memory_deck.html", context)
