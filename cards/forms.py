"""Forms of the learner pages and the staff's card editor; they parse, and apply ``cards.rules``."""

from __future__ import annotations

from functools import lru_cache

from django import forms
from django.contrib.auth import forms as auth_forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm

from labs import selectors as lab_selectors

from . import lesson, rules
from .models import MAX_NEW_CARDS_PER_DAY, Card, LearnerProfile, LessonSection, ReviewLog
from .services.accounts import timezone_names
from .services.pause import MAX_PAUSE_DAYS

HOURS = [(hour, f"{hour:02d}:00") for hour in range(24)]


@lru_cache(maxsize=1)
def timezone_choices() -> list[tuple[str, str]]:
    # Legacy aliases such as "US/Eastern" stay valid but clutter the list; keep them last.
    names = sorted(timezone_names())
    canonical = [n for n in names if "/" in n and not n.startswith(("Etc/", "US/", "SystemV/"))]
    rest = [n for n in names if n not in set(canonical)]
    return [(n, n.replace("_", " ")) for n in ["UTC", *canonical, *[n for n in rest if n != "UTC"]]]


class SignUpForm(UserCreationForm):
    email = forms.EmailField(required=False, help_text="Optional; used for daily reminders.")
    timezone = forms.TypedChoiceField(
        label="Time zone",
        choices=timezone_choices,
        initial="UTC",
        help_text="Your study day follows this time zone.",
    )

    class Meta(UserCreationForm.Meta):  # type: ignore[name-defined]  # not in the stubs
        model = get_user_model()
        fields = ("username",)


class ProfileForm(forms.Form):
    email = forms.EmailField(required=False, help_text="Where reminders are sent.")
    timezone = forms.ChoiceField(label="Time zone", choices=timezone_choices)
    day_starts_at = forms.TypedChoiceField(
        label="Study day starts at",
        choices=HOURS,
        coerce=int,
        help_text="Reviews before this local hour count for the previous day.",
    )
    reminders = forms.BooleanField(
        label="Send me a daily reminder when cards are due", required=False
    )
    reminder_hour = forms.TypedChoiceField(
        label="Reminder time",
        choices=HOURS,
        coerce=int,
        help_text="Local time after which the day's reminder may be sent.",
    )
    new_cards_per_day = forms.IntegerField(
        label="New cards per day",
        min_value=0,
        max_value=MAX_NEW_CARDS_PER_DAY,
        required=False,
        help_text="On each day you review, up to this many new cards join your ladder "
        "(0: none). “Learn more today” on the dashboard adds a batch at once.",
    )
    theme = forms.ChoiceField(label="Colours", choices=LearnerProfile.Theme.choices, required=False)
    password = forms.CharField(
        label="Current password",
        required=False,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
        help_text="Needed only to change the e-mail address.",
    )

    # Left out of a post (an older page, a client sending the rest): kept as they are.
    KEPT_WHEN_ABSENT = ("new_cards_per_day", "theme")

    def clean(self) -> dict:
        cleaned = super().clean() or {}
        for name in self.KEPT_WHEN_ABSENT:
            if cleaned.get(name) in (None, ""):
                cleaned.pop(name, None)
        return cleaned


class PasswordChangeForm(auth_forms.PasswordChangeForm):
    """Django's form, but the current password is checked by the service, not here.

    ``accounts.password_change`` checks it as a log-in is, so that a wrong one counts
    toward the username's lockout; Django's own check would not.
    """

    def clean_old_password(self) -> str:
        return str(self.cleaned_data["old_password"])


class AccountDeleteForm(forms.Form):
    password = forms.CharField(
        label="Your password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )


class ReviewForm(forms.Form):
    # The upper bound is the largest id a row can have; beyond it SQLite overflows.
    card = forms.IntegerField(min_value=1, max_value=2**63 - 1)
    result = forms.ChoiceField(choices=[("pass", "Good"), ("fail", "Again")])
    # An interview card's written answer; the service refuses one for another kind.
    answer_text = forms.CharField(required=False, max_length=ReviewLog.MAX_ANSWER_TEXT_CHARS)


# --- Study controls ---------------------------------------------------------------


class ReportForm(forms.Form):
    card = forms.IntegerField(min_value=1, max_value=2**63 - 1, widget=forms.HiddenInput)
    exercise = forms.IntegerField(
        min_value=1, max_value=2**63 - 1, required=False, widget=forms.HiddenInput
    )
    text = forms.CharField(
        label="What is wrong?",
        min_length=1,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3, "maxlength": 2000}),
        help_text="Up to 2,000 characters. Staff read every report.",
    )


class PauseForm(forms.Form):
    start = forms.DateField(
        label="Pause from", widget=forms.DateInput(attrs={"type": "date"}), help_text=""
    )
    days = forms.IntegerField(
        label="For how many days",
        min_value=1,
        max_value=MAX_PAUSE_DAYS,
        help_text=(
            f"1 to {MAX_PAUSE_DAYS} days. Nothing falls due meanwhile; due dates move on by "
            "the pause."
        ),
    )


class PointLinesField(forms.CharField):
    """An interview card's key points edited as text, one point per line (blank lines skipped)."""

    widget = forms.Textarea(attrs={"rows": 5})

    def prepare_value(self, value):
        if isinstance(value, (list, tuple)):
            return "\n".join(str(point) for point in value)
        return value

    def to_python(self, value):
        text = super().to_python(value)
        return [line.strip() for line in text.splitlines() if line.strip()]


class CardAdminForm(forms.ModelForm):
    """The staff's card editor: the card rules of ``cards.rules``, as the API and deck files."""

    points = PointLinesField(
        required=False,
        label="Key points",
        help_text=(
            f"Interview cards only: the model answer's key points, one per line (at most "
            f"{rules.MAX_POINTS}, each up to {rules.MAX_POINT_CHARS} characters). Learners tick "
            "them against the answer they wrote."
        ),
    )

    class Meta:
        model = Card
        fields = [
            "deck",
            "key",
            "kind",
            "position",
            "is_active",
            "tags",
            "prompt",
            "answer",
            "points",
            "exercise",
            "lab",
            "lesson_section",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "lesson_section" in self.fields:
            self.fields["lesson_section"].widget = forms.Select(choices=self._section_choices())
        if "lab" in self.fields:
            # The catalogue's labs to choose from; the card rules check the choice.
            labs = lab_selectors.labs_list()
            self.fields["lab"].widget = forms.Select(
                choices=[
                    ("", "---------"),
                    *((lab.slug, f"{lab.title} ({lab.slug})") for lab in labs),
                ]
            )

    def clean(self):
        cleaned = super().clean()
        fields = ("kind", "prompt", "answer", "exercise", "lab", "points")
        if any(name in self.errors for name in fields):
            return cleaned  # a field already failed on its own; its message says why
        instance = self.instance
        values = {
            name: cleaned.get(name, getattr(instance, name, None) if instance else None)
            for name in fields
        }
        for field, messages in rules.card_problems(
            answer=values["answer"] or "",
            kind=values["kind"],
            prompt=values["prompt"] or "",
            exercise=values["exercise"],
            lab=values["lab"] or None,
            points=values["points"] or [],
        ).items():
            # "exercise.params.n" is shown on the exercise field as "params.n: ...",
            # "points.2" on the points field as "Line 3: ...".
            name, _, detail = field.partition(".")
            if name == "points" and detail.isdigit():
                detail = f"Line {int(detail) + 1}"
            self.add_error(name, [f"{detail}: {m}" if detail else m for m in messages])
        self._check_key(cleaned)
        self._check_section(cleaned)
        return cleaned

    def _section_choices(self) -> list:
        """The sections of the card's deck; for a new card, those of every deck, by deck."""
        deck_id = getattr(self.instance, "deck_id", None)
        sections = LessonSection.objects.select_related("deck").order_by(
            "deck__title", "position", "id"
        )
        if deck_id:
            sections = sections.filter(deck_id=deck_id)
        groups: dict[str, list[tuple[str, str]]] = {}
        for section in sections:
            groups.setdefault(section.deck.title, []).append(
                (section.key, f"{section.title} ({section.key})")
            )
        if deck_id:
            return [("", "---------"), *next(iter(groups.values()), [])]
        return [("", "---------"), *groups.items()]

    def _check_section(self, cleaned) -> None:
        deck, section = cleaned.get("deck"), cleaned.get("lesson_section") or None
        cleaned["lesson_section"] = section
        if deck is None or "lesson_section" in self.errors:
            return
        for message in rules.lesson_section_problems(section, lesson.section_keys(deck)).get(
            "lesson_section", []
        ):
            self.add_error("lesson_section", message)

    def _check_key(self, cleaned) -> None:
        deck, key = cleaned.get("deck"), cleaned.get("key")
        if not key or deck is None or "key" in self.errors:
            return
        clash = Card.objects.filter(deck=deck, key=key)
        if self.instance.pk:
            clash = clash.exclude(pk=self.instance.pk)
        for message in rules.key_problems(key, taken=clash.exists()).get("key", []):
            # Named here, the unique constraint is not checked again with its own wording.
            self.add_error("key", message)
