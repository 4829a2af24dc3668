"""JSON-Schema lowering for providers, and the checks that say whether a schema fits one.

Pure functions: the input is never modified, walks are bounded, and property names are names,
never keywords.
"""

# What the rest of the library shares of the walkers (not part of the public API).
from toolwire.schema._base import ConversionNote
from toolwire.schema._base import escape_pointer as escape_pointer
from toolwire.schema._bundle import bundle as bundle
from toolwire.schema._bundle import named_resources as named_resources
from toolwire.schema._bundle import unresolved_references as unresolved_references
from toolwire.schema._rewrite import external_references as external_references
from toolwire.schema._rewrite import for_validation as for_validation
from toolwire.schema._rewrite import short_text as short_text
from toolwire.schema.gemini import to_gemini_json_schema, to_gemini_openapi_schema

__all__ = ["ConversionNote", "to_gemini_json_schema", "to_gemini_openapi_schema"]
