"""toolwire: one tool definition, every model's tool calling, governed execution.

Define tools once (functions, JSON-Schema tools), declare them to a provider in exactly the
shape it accepts, parse the model's calls back and answer each one.
"""

from toolwire import _scrub
from toolwire._api import (
    Listing,
    Outcome,
    ParsedTurn,
    decide,
    execute_tool_calls,
    execute_tool_calls_sync,
    history,
    parse_turn,
    pending,
    respond,
    tools,
)
from toolwire._loop import LoopEvent, LoopResult, TurnLimit, loop, loop_events
from toolwire.approval import (
    ApprovalPending,
    ApprovalRequest,
    AutoApprove,
    CallbackApproval,
    Decision,
    DeferredApproval,
    allow,
    deny,
    halt,
)
from toolwire.calls import (
    AudioContent,
    Caller,
    Content,
    EmbeddedResource,
    ErrorKind,
    ImageContent,
    RejectedCall,
    ResourceLink,
    TextContent,
    ToolCall,
    ToolResult,
)
from toolwire.errors import (
    AuthorizationError,
    AuthorizationRequired,
    ConfigurationError,
    InvalidArguments,
    MalformedResponse,
    MissingDependency,
    NameCollisionError,
    RunBindingConflict,
    RunNotFound,
    SchemaConversionError,
    StoreUnavailable,
    ToolNotFound,
    ToolwireError,
    ToolwireWarning,
)

# The documented paths (toolwire.executor, .ledger, .store), so each is an attribute of the package.
from toolwire.executor import CallContext, CallOutcome, Executor, Veto, make_call
from toolwire.grammar import Grammar
from toolwire.inputs import InputAnswer, InputRequest
from toolwire.ledger import CallTrail
from toolwire.policy import Policy, Rule, called_by, from_untrusted, tainted_by
from toolwire.provenance import Origins, Provenance
from toolwire.providers import Stopped
from toolwire.store import MemoryStore, RunStore, SQLiteStore
from toolwire.tool import Tool, tool
from toolwire.toolset import ToolSet

__version__ = "0.1.0"

# Credentials out of every log record toolwire's code paths can cause, before the first one.
_scrub.scrub_logs()

__all__ = [
    "ApprovalPending",
    "ApprovalRequest",
    "AudioContent",
    "AuthorizationError",
    "AuthorizationRequired",
    "AutoApprove",
    "CallContext",
    "CallOutcome",
    "CallTrail",
    "CallbackApproval",
    "Caller",
    "ConfigurationError",
    "Content",
    "Decision",
    "DeferredApproval",
    "EmbeddedResource",
    "ErrorKind",
    "Executor",
    "Grammar",
    "ImageContent",
    "InputAnswer",
    "InputRequest",
    "InvalidArguments",
    "Listing",
    "LoopEvent",
    "LoopResult",
    "MalformedResponse",
    "MemoryStore",
    "MissingDependency",
    "NameCollisionError",
    "Origins",
    "Outcome",
    "ParsedTurn",
    "Policy",
    "Provenance",
    "RejectedCall",
    "ResourceLink",
    "Rule",
    "RunBindingConflict",
    "RunNotFound",
    "RunStore",
    "SQLiteStore",
    "SchemaConversionError",
    "Stopped",
    "StoreUnavailable",
    "TextContent",
    "Tool",
    "ToolCall",
    "ToolNotFound",
    "ToolResult",
    "ToolSet",
    "ToolwireError",
    "ToolwireWarning",
    "TurnLimit",
    "Veto",
    "__version__",
    "allow",
    "called_by",
    "decide",
    "deny",
    "execute_tool_calls",
    "execute_tool_calls_sync",
    "from_untrusted",
    "halt",
    "history",
    "loop",
    "loop_events",
    "make_call",
    "parse_turn",
    "pending",
    "respond",
    "tainted_by",
    "tool",
    "tools",
]
