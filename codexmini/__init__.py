"""codexmini: drive ``codex app-server`` from Python, with the standard library only.

Everything a user needs is importable from here; the ``codexmini._*`` modules
are internal and may change without notice.  Two submodules are public as
well: :mod:`codexmini.sync` (the same API as blocking calls, for code without
an event loop) and :mod:`codexmini.testing` (the fake app-server and the
scripted model server, for tests).

Importing the package is cheap: a name is imported from its internal module
the first time it is used (PEP 562), so code that only reads a session log or
folds events never imports ``asyncio`` or ``subprocess``.

The package is vendorable: every import inside it is relative, so the folder
can be copied anywhere under any name.
"""

from __future__ import annotations

from ._version import CODEX_VERSION, OLDEST_CODEX_VERSION, __version__

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (a type checker takes
#: any name ``TYPE_CHECKING`` to be true): the package's face imports nothing more.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any, Dict, List

#: Public name → the internal module that defines it: the one list of the public
#: face.  ``__all__`` is derived from it; so is the type checkers' view at the end
#: of this file (``make public`` writes it; a test fails when it is stale).
_EXPORTS: Dict[str, str] = {
    # one call for the common case
    "run": "_run",
    "RunResult": "_threads",
    # the agent over a durable session log
    "Agent": "_agent",
    "AgentConfig": "_agent",
    "Blocked": "_agent",
    "TurnEnd": "_agent",
    "ModelEndpoint": "_endpoint",
    "SessionLog": "_session",
    "read_log": "_session",
    "iter_log": "_session",
    "fork_log": "_session",
    "ReadResult": "_session",
    "LogEvents": "_session",
    "LogStream": "_session",
    # how codex is started
    "Launch": "_launch",
    "Timeouts": "_launch",
    "Limits": "_launch",
    # how a running codex is reached
    "Connect": "_connect",
    "SignedToken": "_connect",
    "connect_daemon": "_daemon",
    "stop_daemon": "_daemon",
    # the client, its threads and turns
    "AppServerClient": "_client",
    "Thread": "_threads",
    "Turn": "_threads",
    "RetryPolicy": "_retry",
    "NO_RETRY": "_retry",
    # what a turn is given
    "text_input": "_inputs",
    "image_input": "_inputs",
    "image_url_input": "_inputs",
    "skill_input": "_inputs",
    "mention_input": "_inputs",
    # the thread options codex accepts (typing.Literal)
    "SandboxMode": "_permission",
    "ApprovalPolicy": "_permission",
    # approvals: what codex asks, what the caller answers
    "ApprovalRequest": "_permission",
    "Reply": "_permission",
    # turn events
    "Event": "_events",
    "Usage": "_events",
    "AgentMessageDelta": "_events",
    "ReasoningSummaryDelta": "_events",
    "ReasoningTextDelta": "_events",
    "PlanDelta": "_events",
    "PlanUpdated": "_events",
    "CommandOutputDelta": "_events",
    "ItemStarted": "_events",
    "ItemCompleted": "_events",
    "TokenUsage": "_events",
    "DiffUpdated": "_events",
    "RetryingError": "_events",
    "TurnCompleted": "_events",
    "InvalidNotification": "_events",
    "Unmapped": "_events",
    # the agent's stream events: deltas tied to the durable message they become
    "MessageDelta": "_events",
    "MessageStreamEnd": "_events",
    "MessageSummaryDelta": "_events",
    "MessageReasoningDelta": "_events",
    "MessagePlanDelta": "_events",
    "SessionStarted": "_events",
    "PhaseChanged": "_events",
    # account events (global: a subscription's events(), not a turn)
    "RateLimitsUpdated": "_events",
    "RateLimitWindow": "_events",
    # the one error tree (drawn in codexmini._errors)
    "CodexminiError": "_errors",
    "ProtocolError": "_errors",
    "RpcError": "_errors",
    "ServerOverloaded": "_errors",
    "MethodNotFound": "_errors",
    "ThreadNotFound": "_errors",
    "TransportError": "_errors",
    "ProcessExited": "_errors",
    "ConnectFailed": "_errors",
    "AuthRejected": "_errors",
    "WebSocketError": "_errors",
    "ClientClosed": "_errors",
    "RequestTimeout": "_errors",
    "WriteTimeout": "_errors",
    "CodexTimeout": "_errors",
    "TurnTimeout": "_errors",
    "ModelUnreachable": "_errors",
    "BinaryNotFound": "_errors",
    "StartFailed": "_errors",
    "ConfigError": "_errors",
    "EndpointKeyMissing": "_errors",
    "UnencodableInput": "_errors",
    "SchemaError": "_errors",
    "OutputValidationError": "_errors",
    "SessionLogError": "_errors",
    "SessionLogLocked": "_errors",
    "SessionLogChanged": "_errors",
    "ForkRefused": "_errors",
    "TurnFailed": "_errors",
    "UsageLimitExceeded": "_errors",
    # warnings
    "CodexVersionWarning": "_binary",
}

#: Public submodules, imported on first attribute access (``codexmini.sync``).
_SUBMODULES = ("sync",)

__all__ = ["__version__", "CODEX_VERSION", "OLDEST_CODEX_VERSION", *_EXPORTS]


def __getattr__(name: str) -> Any:
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)  # the import binds it as a global
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'codexmini' has no attribute {name!r}")

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next lookup is a plain global
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # written from _EXPORTS by tools/gen_public.py (make public): do not edit
    from ._agent import Agent as Agent
    from ._agent import AgentConfig as AgentConfig
    from ._agent import Blocked as Blocked
    from ._agent import TurnEnd as TurnEnd
    from ._binary import CodexVersionWarning as CodexVersionWarning
    from ._client import AppServerClient as AppServerClient
    from ._connect import Connect as Connect
    from ._connect import SignedToken as SignedToken
    from ._daemon import connect_daemon as connect_daemon
    from ._daemon import stop_daemon as stop_daemon
    from ._endpoint import ModelEndpoint as ModelEndpoint
    from ._errors import AuthRejected as AuthRejected
    from ._errors import BinaryNotFound as BinaryNotFound
    from ._errors import ClientClosed as ClientClosed
    from ._errors import CodexminiError as CodexminiError
    from ._errors import CodexTimeout as CodexTimeout
    from ._errors import ConfigError as ConfigError
    from ._errors import ConnectFailed as ConnectFailed
    from ._errors import EndpointKeyMissing as EndpointKeyMissing
    from ._errors import ForkRefused as ForkRefused
    from ._errors import MethodNotFound as MethodNotFound
    from ._errors import ModelUnreachable as ModelUnreachable
    from ._errors import OutputValidationError as OutputValidationError
    from ._errors import ProcessExited as ProcessExited
    from ._errors import ProtocolError as ProtocolError
    from ._errors import RequestTimeout as RequestTimeout
    from ._errors import RpcError as RpcError
    from ._errors import SchemaError as SchemaError
    from ._errors import ServerOverloaded as ServerOverloaded
    from ._errors import SessionLogChanged as SessionLogChanged
    from ._errors import SessionLogError as SessionLogError
    from ._errors import SessionLogLocked as SessionLogLocked
    from ._errors import StartFailed as StartFailed
    from ._errors import ThreadNotFound as ThreadNotFound
    from ._errors import TransportError as TransportError
    from ._errors import TurnFailed as TurnFailed
    from ._errors import TurnTimeout as TurnTimeout
    from ._errors import UnencodableInput as UnencodableInput
    from ._errors import UsageLimitExceeded as UsageLimitExceeded
    from ._errors import WebSocketError as WebSocketError
    from ._errors import WriteTimeout as WriteTimeout
    from ._events import AgentMessageDelta as AgentMessageDelta
    from ._events import CommandOutputDelta as CommandOutputDelta
    from ._events import DiffUpdated as DiffUpdated
    from ._events import Event as Event
    from ._events import InvalidNotification as InvalidNotification
    from ._events import ItemCompleted as ItemCompleted
    from ._events import ItemStarted as ItemStarted
    from ._events import MessageDelta as MessageDelta
    from ._events import MessagePlanDelta as MessagePlanDelta
    from ._events import MessageReasoningDelta as MessageReasoningDelta
    from ._events import MessageStreamEnd as MessageStreamEnd
    from ._events import MessageSummaryDelta as MessageSummaryDelta
    from ._events import PhaseChanged as PhaseChanged
    from ._events import PlanDelta as PlanDelta
    from ._events import PlanUpdated as PlanUpdated
    from ._events import RateLimitsUpdated as RateLimitsUpdated
    from ._events import RateLimitWindow as RateLimitWindow
    from ._events import ReasoningSummaryDelta as ReasoningSummaryDelta
    from ._events import ReasoningTextDelta as ReasoningTextDelta
    from ._events import RetryingError as RetryingError
    from ._events import SessionStarted as SessionStarted
    from ._events import TokenUsage as TokenUsage
    from ._events import TurnCompleted as TurnCompleted
    from ._events import Unmapped as Unmapped
    from ._events import Usage as Usage
    from ._inputs import image_input as image_input
    from ._inputs import image_url_input as image_url_input
    from ._inputs import mention_input as mention_input
    from ._inputs import skill_input as skill_input
    from ._inputs import text_input as text_input
    from ._launch import Launch as Launch
    from ._launch import Limits as Limits
    from ._launch import Timeouts as Timeouts
    from ._permission import ApprovalPolicy as ApprovalPolicy
    from ._permission import ApprovalRequest as ApprovalRequest
    from ._permission import Reply as Reply
    from ._permission import SandboxMode as SandboxMode
    from ._retry import NO_RETRY as NO_RETRY
    from ._retry import RetryPolicy as RetryPolicy
    from ._run import run as run
    from ._session import LogEvents as LogEvents
    from ._session import LogStream as LogStream
    from ._session import ReadResult as ReadResult
    from ._session import SessionLog as SessionLog
    from ._session import fork_log as fork_log
    from ._session import iter_log as iter_log
    from ._session import read_log as read_log
    from ._threads import RunResult as RunResult
    from ._threads import Thread as Thread
    from ._threads import Turn as Turn
