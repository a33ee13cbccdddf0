"""Token authentication that loads the learner's profile with the token, in one query.

Nearly every study endpoint needs the learner's "today", which needs the profile
(time zone, day start); reading it with the token saves a query per request. The
query is compiled once per connection (``cards.db.compiled``): every API request makes it.
"""

from __future__ import annotations

from typing import cast

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from .db.compiled import CompiledQuery

_STAND_IN_KEY = "compiled-stand-in-key"


def token_query(key: str):
    """The token of ``key`` with its user and the user's profile (``select_related``)."""
    return Token.objects.select_related("user", "user__profile").filter(key=key)


_TOKEN = CompiledQuery(
    lambda: token_query(_STAND_IN_KEY), slots={"key": _STAND_IN_KEY}, plain=token_query
)


def token_with_profile(key: str) -> Token | None:
    found = _TOKEN.instances(key=key)
    return cast(Token, found[0]) if found else None


class ProfileTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key):
        token = token_with_profile(key)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (token.user, token)
