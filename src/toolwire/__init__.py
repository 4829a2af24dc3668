"""toolwire: one tool definition, every model's tool calling, governed execution.

Define tools once (functions, JSON-Schema tools), declare them to a provider in exactly the
shape it accepts, parse the model's calls back and answer each one.
"""

from toolwire.calls import (
    AudioContent,
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
    ConfigurationError,
    InvalidArguments,
    MissingDependency,
    NameCollisionError,
    SchemaConversionError,
    ToolNotFound,
    ToolwireError,
)
from toolwire.tool import Tool, ToolSet, tool

__version__ = "0.1.0"

__all__ = [
    "AudioContent",
    "ConfigurationError",
    "Content",
    "EmbeddedResource",
    "ErrorKind",
    "ImageContent",
    "InvalidArguments",
    "MissingDependency",
    "NameCollisionError",
    "RejectedCall",
    "ResourceLink",
    "SchemaConversionError",
    "TextContent",
    "Tool",
    "ToolCall",
    "ToolNotFound",
    "ToolResult",
    "ToolSet",
    "ToolwireError",
    "__version__",
    "tool",
]
