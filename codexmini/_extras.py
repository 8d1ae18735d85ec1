"""The requests a client offers beyond threads: models, config, account, a command.

:class:`Extras` is mixed into :class:`~codexmini.AppServerClient`; each
method is one client request of the schema, sent through
:meth:`~codexmini.AppServerClient.request` (so an overloaded codex is retried
like any request) with its result typed as the pinned schema's response
(:mod:`codexmini.protocol`; nothing is validated at run time).  Listings that
the server pages are async iterators that follow its cursor.  For every other
client request there is :attr:`~codexmini.AppServerClient.call`, one typed
method each.

What the recorded binaries do with these (``fixtures/<version>/``): ``model/list``
pages by offset (``nextCursor`` ``"2"``, ``"4"``…, fixture ``models``);
``config/value/write`` writes ``$CODEX_HOME/config.toml`` and ``config/read``
shows it at once (``config_write``); ``account/rateLimits/read`` needs a
ChatGPT login -- with an API key codex answers "codex account authentication
required to read rate limits" (``account``), while the rate-limit snapshot
still arrives after every model response as ``account/rateLimits/updated``
(:attr:`~codexmini.AppServerClient.rate_limits`); ``command/exec`` runs an
argv in codex's sandbox and answers with its exit code and both streams
(``command_exec``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence

if TYPE_CHECKING:
    from .protocol import (
        CommandExecResponse,
        ConfigReadResponse,
        ConfigWriteResponse,
        GetAccountRateLimitsResponse,
        GetAccountResponse,
        MergeStrategy,
        Model,
        ModelListResponse,
        SandboxPolicy,
    )


async def pages(fetch: Callable[[Dict[str, Any]], Awaitable[Any]], params: Mapping[str, Any]) -> AsyncIterator[Any]:
    """Every element of every page a cursor-paged list request returns:
    ``fetch(params)`` → ``{"data": [...], "nextCursor": str or None}``, asked
    again with ``cursor`` set until ``nextCursor`` is null, a page is empty, or
    the server names a cursor it named before (nothing loops forever)."""
    request = dict(params)
    seen = set()
    while True:
        page = await fetch(dict(request))
        data: List[Any] = page.get("data") or []
        for element in data:
            yield element
        cursor: Optional[str] = page.get("nextCursor")
        if not cursor or not data or cursor in seen:
            return
        seen.add(cursor)
        request["cursor"] = cursor


def _set(request: Dict[str, Any], **values: Any) -> Dict[str, Any]:
    """``request`` with every value that is not ``None``, under its (wire) key."""
    for key, value in values.items():
        if value is not None:
            request[key] = value
    return request


class Extras:
    """Models, config, account and ``command/exec``; mixed into the client."""

    if TYPE_CHECKING:  # provided by AppServerClient

        async def request(
            self, method: str, params: Optional[Mapping[str, Any]] = None, timeout: Optional[float] = None
        ) -> Any: ...

    def models(
        self,
        *,
        include_hidden: Optional[bool] = None,
        limit: Optional[int] = None,
        provider: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> AsyncIterator["Model"]:
        """Every model codex offers (``model/list``), page after page."""
        request = _set({}, includeHidden=include_hidden, limit=limit, modelProvider=provider)

        async def fetch(page: Dict[str, Any]) -> "ModelListResponse":
            result: ModelListResponse = await self.request("model/list", page, timeout)
            return result

        return pages(fetch, request)

    async def read_config(
        self, *, cwd: Optional[str] = None, include_layers: Optional[bool] = None, timeout: Optional[float] = None
    ) -> "ConfigReadResponse":
        """The effective configuration (``config/read``): ``config`` and each key's ``origins``."""
        result: ConfigReadResponse = await self.request(
            "config/read", _set({}, cwd=cwd, includeLayers=include_layers), timeout
        )
        return result

    async def write_config(
        self,
        key_path: str,
        value: Any,
        *,
        merge: "MergeStrategy" = "replace",
        file_path: Optional[str] = None,
        expected_version: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> "ConfigWriteResponse":
        """Write one key of the user's ``config.toml`` (``config/value/write``,
        ``key_path`` dotted: ``"model"``, ``"tools.update_plan"``); the result
        names the file and its new ``version``."""
        request = _set(
            {"keyPath": key_path, "value": value, "mergeStrategy": merge},
            filePath=file_path,
            expectedVersion=expected_version,
        )
        result: ConfigWriteResponse = await self.request("config/value/write", request, timeout)
        return result

    async def read_account(
        self, *, refresh_token: Optional[bool] = None, timeout: Optional[float] = None
    ) -> "GetAccountResponse":
        """The account codex runs as (``account/read``): ``account`` is ``None``
        with an API-key provider, and ``requiresOpenaiAuth`` says whether a
        login is needed."""
        result: GetAccountResponse = await self.request("account/read", _set({}, refreshToken=refresh_token), timeout)
        return result

    async def read_rate_limits(self, *, timeout: Optional[float] = None) -> "GetAccountRateLimitsResponse":
        """The account's rate limits (``account/rateLimits/read``).  Needs a
        ChatGPT login: otherwise codex answers with an
        :class:`~codexmini.RpcError` ("codex account authentication required
        to read rate limits"); :attr:`AppServerClient.rate_limits` holds what
        codex sent with the last model response either way."""
        result: GetAccountRateLimitsResponse = await self.request("account/rateLimits/read", None, timeout)
        return result

    async def exec(
        self,
        command: Sequence[str],
        *,
        cwd: Optional[str] = None,
        env: Optional[Mapping[str, Optional[str]]] = None,
        timeout_ms: Optional[int] = None,
        sandbox_policy: Optional["SandboxPolicy"] = None,
        params: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> "CommandExecResponse":
        """Run ``command`` (an argv) in codex's sandbox without a thread
        (``command/exec``) and wait for it: ``exitCode``, ``stdout``,
        ``stderr``.  A command that fails is a result, not an error."""
        request = _set(
            {"command": list(command)},
            cwd=cwd,
            env=dict(env) if env is not None else None,
            timeoutMs=timeout_ms,
            sandboxPolicy=sandbox_policy,
        )
        request.update(params or {})
        result: CommandExecResponse = await self.request("command/exec", request, timeout)
        return result


__all__ = ["Extras", "pages"]
