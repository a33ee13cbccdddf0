"""The lab page's one form: the code a learner hands in.

It only parses the request; what code is acceptable (not empty, UTF-8, at most 64 KiB) is
decided by ``labs.services.submission_create``, whose errors come back on this field.
"""

from __future__ import annotations

from django import forms


class SubmissionForm(forms.Form):
    # strip=False: leading indentation and trailing newlines are part of Python source.
    code = forms.CharField(
        strip=False,
        error_messages={"required": "Write some code first: the editor is empty."},
    )
