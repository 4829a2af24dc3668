"""JSON-Schema lowering for providers, and the checks that say whether a schema fits one.

Pure functions: the input is never modified, walks are bounded, and property names are names,
never keywords.
"""

from toolwire.schema._base import ConversionNote
from toolwire.schema.gemini import to_gemini_json_schema, to_gemini_openapi_schema

__all__ = ["ConversionNote", "to_gemini_json_schema", "to_gemini_openapi_schema"]
