"""Who is calling: none (local development), static API keys, or bearer JWTs.

A thread belongs to the principal that created it; every route for a thread answers 404 to
anyone else, exactly as for a thread that does not exist (nothing leaks its existence).
"""

from __future__ import annotations

import asyncio
from functools import lru_cache
from typing import Annotated, Any

import jwt
from fastapi import Depends, HTTPException, Request

from durable_agui.settings import Settings

ANONYMOUS = "anonymous"
"""The principal of every request when authentication is off."""

LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}


def unauthorized(message: str) -> HTTPException:
    return HTTPException(
        status_code=401,
        detail={"type": "Unauthorized", "message": message},
        headers={"WWW-Authenticate": "Bearer"},
    )


def check_auth_settings(settings: Settings) -> None:
    """Refuse to serve without authentication anywhere but on loopback.

    Raises:
        RuntimeError: ``auth="none"`` with a non-loopback ``api_host``; ``api_key`` without
            keys; ``jwt`` without a key or a JWKS URL.
    """
    if settings.auth == "none" and settings.api_host not in LOOPBACK_HOSTS:
        raise RuntimeError(
            f"DURABLE_AGUI_AUTH=none serves anyone who can reach {settings.api_host}; "
            "bind to 127.0.0.1, or set DURABLE_AGUI_AUTH=api_key or jwt"
        )
    if settings.auth == "api_key" and not settings.api_keys:
        raise RuntimeError("DURABLE_AGUI_AUTH=api_key needs DURABLE_AGUI_API_KEYS")
    if settings.auth == "jwt" and not (settings.jwt_key or settings.jwt_jwks_url):
        raise RuntimeError("DURABLE_AGUI_AUTH=jwt needs DURABLE_AGUI_JWT_KEY or _JWT_JWKS_URL")


@lru_cache(maxsize=8)
def _jwks_client(url: str) -> jwt.PyJWKClient:
    return jwt.PyJWKClient(url, cache_keys=True, lifespan=300)


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token:
        return token.strip()
    return request.headers.get("x-api-key")


async def _verify_jwt(token: str, settings: Settings) -> dict[str, Any]:
    key: Any = settings.jwt_key
    if settings.jwt_jwks_url:
        signing_key = await asyncio.to_thread(
            _jwks_client(settings.jwt_jwks_url).get_signing_key_from_jwt, token
        )
        key = signing_key.key
    claims: dict[str, Any] = jwt.decode(
        token,
        key,
        algorithms=settings.jwt_algorithms,
        audience=settings.jwt_audience,
        issuer=settings.jwt_issuer,
        options={"require": ["sub", "exp"]},
    )
    return claims


async def current_principal(request: Request) -> str:
    """The caller's principal: the API key's name, or the JWT's ``sub``; 401 otherwise."""
    settings: Settings = request.app.state.settings
    if settings.auth == "none":
        return ANONYMOUS
    token = _bearer(request)
    if token is None:
        raise unauthorized("send Authorization: Bearer <token>")
    if settings.auth == "api_key":
        principal = settings.api_keys.get(token)
        if principal is None:
            raise unauthorized("unknown API key")
        return principal
    try:
        claims = await _verify_jwt(token, settings)
    except (jwt.PyJWTError, jwt.PyJWKClientError) as err:
        raise unauthorized(f"invalid token: {err}") from err
    return str(claims["sub"])


PrincipalDep = Annotated[str, Depends(current_principal)]
