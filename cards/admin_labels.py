"""Names for the admin's fields in rows: the tabular inlines and the list's editable column.

A row of a tabular inline, or of the card list's editable "position" column, shows its
fields under a column heading, with no ``<label>`` of their own; a screen reader then
announces "edit text" and nothing more. Each such field gets an ``aria-label`` naming the
column and its row (``Position of “Recall: Why divide…”``), the delete box too.
"""

from __future__ import annotations

from django import forms
from django.forms.models import BaseInlineFormSet
from django.forms.utils import pretty_name

ROW_NAME_CHARS = 60


def _row_name(form: forms.BaseForm) -> str:
    instance = getattr(form, "instance", None)
    if instance is not None and instance.pk is not None:
        text = " ".join(str(instance).split())
        if len(text) > ROW_NAME_CHARS:
            text = text[: ROW_NAME_CHARS - 1].rstrip() + "…"
        return f"“{text}”"
    index = (form.prefix or "").rsplit("-", 1)[-1]
    return f"new row {int(index) + 1}" if index.isdigit() else "the new row"


def label_row(form: forms.BaseForm) -> None:
    """Give each visible field of ``form`` an accessible name: its column and its row."""
    row = _row_name(form)
    for name, field in form.fields.items():
        if field.widget.is_hidden:
            continue
        if name == "DELETE":
            text = f"Delete {row}"
        else:
            text = f"{field.label or pretty_name(name)} of {row}"
        field.widget.attrs.setdefault("aria-label", text)


class RowLabelledForm(forms.ModelForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        label_row(self)


class RowLabelledInlineFormSet(BaseInlineFormSet):
    """An inline formset whose rows, their delete box included, are labelled."""

    def add_fields(self, form, index):
        super().add_fields(form, index)
        label_row(form)


def row_labelled(form_class: type[forms.BaseForm]) -> type[forms.BaseForm]:
    """``form_class`` with its rows labelled (for ``ModelAdmin.get_changelist_form``)."""
    return type(form_class.__name__, (RowLabelledForm, form_class), {})
