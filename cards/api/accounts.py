"""Accounts: register, log in and out, passwords, the profile, export and deletion."""

from __future__ import annotations

from django.contrib.auth import authenticate
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, status
from rest_framework.authentication import BaseAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from .. import selectors, services, tasks
from ..serializers import (
    AccountDeleteSerializer,
    PasswordChangeSerializer,
    PasswordResetConfirmSerializer,
    PasswordResetSerializer,
    ProfileSerializer,
    RegisteredSerializer,
    RegisterSerializer,
    TokenRequestSerializer,
    TokenSerializer,
)
from ..services import accounts as account_services
from ..services import privacy
from .common import CONFLICT, DETAIL

PASSWORD_CHECKED = (
    "The current password is checked as a log-in is: a wrong one counts toward the "
    "username's lockout (web and API log-ins together), the request shares the `login` "
    "limit, and while the username is locked even the right password answers 429 with "
    "Retry-After."
)


def _documents_delete_body(view_method):
    """Let the schema document the request body of a DELETE view method.

    drf-spectacular documents bodies of PUT, PATCH and POST only, and ``DELETE me/``
    takes the password in its body. ``extend_schema`` builds on the schema class it
    finds on the method, so this one, the project's, documents that body as a POST's.
    The schema test of ``DELETE me/`` fails if drf-spectacular changes this.
    """
    base = api_settings.DEFAULT_SCHEMA_CLASS

    class DeleteWithBodySchema(base):  # type: ignore[misc,valid-type]
        def _get_request_body(self, direction="request"):
            if self.method != "DELETE":
                return super()._get_request_body(direction)
            self.method = "POST"
            try:
                return super()._get_request_body(direction)
            finally:
                self.method = "DELETE"

    view_method.kwargs = {"schema": DeleteWithBodySchema}
    return view_method


def _carries_password(request) -> bool:
    data = request.data
    return isinstance(data, dict) and "password" in data


# Open to anyone: no credentials are read, so a stale token cannot refuse the request.
# (A comment, not a docstring: the schema would take a docstring as the description.)
class PublicView(APIView):
    permission_classes = [permissions.AllowAny]
    authentication_classes: list[type[BaseAuthentication]] = []


class RegisterView(PublicView):
    throttle_scope = "register"

    @extend_schema(
        tags=["auth"],
        request=RegisterSerializer,
        responses={201: RegisteredSerializer},
        summary="Create a learner account and its API token",
    )
    def post(self, request):
        data = RegisterSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user, token = services.register(**data.validated_data)
        return Response({"username": user.username, "token": token}, status=status.HTTP_201_CREATED)


class TokenView(PublicView):
    throttle_scope = "login"

    @extend_schema(
        tags=["auth"],
        request=TokenRequestSerializer,
        responses={200: TokenSerializer},
        summary="Exchange a username and password for the API token",
        description=(
            "Failed log-ins for one username (here and on the web log-in together) lock it "
            "for a while after too many, the right password included: 429 with Retry-After. "
            "A password reset ends the lockout."
        ),
    )
    def post(self, request):
        data = TokenRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # The plain HttpRequest: the lockout check flags it, and its middleware answers 429.
        user = authenticate(
            request._request,
            username=data.validated_data["username"],
            password=data.validated_data["password"],
        )
        if user is None:
            raise ValidationError(
                {"non_field_errors": ["Unable to log in with these credentials."]}
            )
        return Response(
            {"token": account_services.token_for_login(user=user, request=request._request)}
        )


class LogoutView(APIView):
    @extend_schema(
        tags=["auth"],
        request=None,
        responses={204: None},
        summary="Log out: the token used is deleted",
    )
    def post(self, request):
        if isinstance(request.auth, Token):
            account_services.token_delete(key=request.auth.key)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PasswordResetView(PublicView):
    throttle_scope = "password_reset"

    @extend_schema(
        tags=["auth"],
        request=PasswordResetSerializer,
        responses={202: None},
        summary="Mail a one-time password reset link",
        description=(
            "Answers 202 whether or not the address belongs to an account, in the same time: "
            "a worker mails the link after the answer. The link is built from the site's "
            "configured address (`SITE_URL`), never from the request's Host."
        ),
    )
    def post(self, request):
        data = PasswordResetSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        tasks.enqueue_password_reset_mail(email=data.validated_data["email"])
        return Response(status=status.HTTP_202_ACCEPTED)


class PasswordResetConfirmView(PublicView):
    throttle_scope = "password_reset"

    @extend_schema(
        tags=["auth"],
        request=PasswordResetConfirmSerializer,
        responses={204: None},
        summary="Set a new password with the uid and token of a reset link",
        description="Every API token of the account stops working and a lockout ends.",
    )
    def post(self, request):
        data = PasswordResetConfirmSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        account_services.password_reset_confirm(**data.validated_data)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PasswordChangeView(APIView):
    # The current password is checked as a log-in is: limited and counted the same way.
    throttle_scope = "login"

    @extend_schema(
        tags=["profile"],
        request=PasswordChangeSerializer,
        responses={200: TokenSerializer},
        summary="Change the password; answers a new token and the old one stops working",
        description=PASSWORD_CHECKED,
    )
    def post(self, request):
        data = PasswordChangeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        token = account_services.password_change(
            user=request.user, request=request._request, **data.validated_data
        )
        return Response({"token": token})


class ExportView(APIView):
    @extend_schema(
        tags=["profile"],
        responses={
            200: OpenApiResponse(
                {
                    "type": "object",
                    "properties": {
                        name: {"type": "object" if name == "profile" else "array"}
                        for name in privacy.EXPORT_SECTIONS
                    },
                },
                description="Everything held about the learner, one section per source.",
            )
        },
        summary="Download everything the service holds about you",
    )
    def get(self, request):
        response = Response(privacy.account_export(user=request.user))
        response["Content-Disposition"] = (
            f'attachment; filename="study-export-{request.user.get_username()}.json"'
        )
        return response


class EmailConfirmationView(APIView):
    # Each request mails a link: limited like the other requests that do.
    throttle_scope = "password_reset"

    @extend_schema(
        tags=["profile"],
        request=None,
        responses={
            202: OpenApiResponse(DETAIL.response, description="The link is on its way."),
            400: OpenApiResponse(description='No address on the account: `{"email": [...]}`.'),
            409: CONFLICT,
        },
        summary="Mail a fresh link that confirms the account's e-mail address",
        description=(
            "Reminders go only to a confirmed address (`email_confirmed` in `me/`). "
            "400 when the account has no address, 409 when it is confirmed already."
        ),
    )
    def post(self, request):
        try:
            address = account_services.email_confirmation_request(user=request.user)
        except account_services.EmailAlreadyConfirmed as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(
            {"detail": f"A confirmation link is on its way to {address}."},
            status=status.HTTP_202_ACCEPTED,
        )


class MeView(APIView):
    def get_throttles(self):
        # A request that carries the current password is limited like a log-in.
        method = self.request.method
        if method == "DELETE" or (method == "PATCH" and _carries_password(self.request)):
            self.throttle_scope = "login"
        return super().get_throttles()

    @extend_schema(tags=["profile"], responses={200: ProfileSerializer})
    def get(self, request):
        return Response(ProfileSerializer(selectors.learner_profile(request.user)).data)

    @extend_schema(
        tags=["profile"],
        request=ProfileSerializer,
        responses={200: ProfileSerializer},
        summary="Change the time zone, day start, reminders or email",
        description=(
            "A new `email` needs the current `password` in the same body; a body that carries "
            "`password` shares the `login` limit. " + PASSWORD_CHECKED
        ),
    )
    def patch(self, request):
        profile = selectors.learner_profile(request.user)
        data = ProfileSerializer(profile, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        if "user" in fields:
            fields.update(fields.pop("user"))
        profile = services.profile_update(user=request.user, request=request._request, **fields)
        return Response(ProfileSerializer(profile).data)

    @extend_schema(
        tags=["profile"],
        request=AccountDeleteSerializer,
        responses={
            204: None,
            400: OpenApiResponse(
                {
                    "type": "object",
                    "properties": {"password": {"type": "array", "items": {"type": "string"}}},
                },
                description='No password, or not the current one: `{"password": [...]}`.',
            ),
        },
        summary="Delete the account and its personal data (needs the password)",
        description=(
            "The body carries the current `password`. Afterwards the token answers 401 and "
            "the username is free. The review log is kept for card statistics without any "
            "link to the account. " + PASSWORD_CHECKED
        ),
    )
    @_documents_delete_body
    def delete(self, request):
        data = AccountDeleteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        account_services.account_delete(
            user=request.user, password=data.validated_data["password"], request=request._request
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
