"""A Python callable's signature as a JSON Schema, and the validator for its arguments.

Only pydantic's public API is used: the parameters become the fields of a model made with
``create_model``; the model gives both the schema and the validation, so what the model is
told and what is checked cannot drift apart.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, get_type_hints

import docstring_parser
import pydantic

from toolwire.errors import ConfigurationError, InvalidArguments

__all__ = ["FunctionSchema", "function_schema", "json_path"]


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    """What ``@tool`` learns from a function."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    arguments_model: type[pydantic.BaseModel]
    parameter_names: tuple[str, ...]
    """Parameter names in signature order; field ``i`` of the model is parameter ``i``."""

    def validate(self, tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate and convert ``arguments``; returns the keyword arguments for the function.

        Raises:
            InvalidArguments: with one entry per failing field.
        """
        try:
            model = self.arguments_model.model_validate(arguments)
        except pydantic.ValidationError as exc:
            raise InvalidArguments(
                tool_name, [(json_path(error["loc"]), error["msg"]) for error in exc.errors()]
            ) from None
        # Field i carries parameter i under an alias.
        values = model.__dict__
        return {name: values[f"p{i}"] for i, name in enumerate(self.parameter_names)}


def json_path(loc: Sequence[int | str]) -> str:
    """A location as a JSON path: ``("a", 0, "b")`` is ``$.a[0].b``."""
    path = "$"
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def function_schema(
    func: Callable[..., Any], *, name: str | None = None, description: str | None = None
) -> FunctionSchema:
    """Build the schema and validator of ``func`` from its type hints and docstring.

    Raises:
        ConfigurationError: for ``*args``/``**kwargs``, positional-only parameters or hints
            pydantic cannot turn into a schema.
    """
    func_name = name or getattr(func, "__name__", None) or type(func).__name__
    doc = docstring_parser.parse(inspect.getdoc(func) or "")
    param_docs = {p.arg_name: p.description for p in doc.params if p.description}
    try:
        hints = get_type_hints(func, include_extras=True)
    except (NameError, TypeError) as exc:
        raise ConfigurationError(f"cannot resolve the type hints of {func_name!r}: {exc}") from exc

    fields: dict[str, Any] = {}
    names: list[str] = []
    for i, param in enumerate(inspect.signature(func).parameters.values()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ConfigurationError(
                f"{func_name!r}: parameter {param.name!r} must be a keyword parameter to be a "
                "tool argument"
            )
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        # Fields are named p0, p1, ... with the parameter as alias, so parameter names such as
        # `schema` or `model_config` cannot clash with BaseModel's attributes.
        fields[f"p{i}"] = (
            annotation,
            pydantic.Field(default, alias=param.name, description=param_docs.get(param.name)),
        )
        names.append(param.name)

    try:
        model = pydantic.create_model(
            f"{func_name}_arguments",
            # NaN and Infinity are not JSON numbers: a model sending them sent no number.
            __config__=pydantic.ConfigDict(
                extra="forbid", populate_by_name=False, allow_inf_nan=False
            ),
            **fields,
        )
        input_schema = model.model_json_schema()
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError, TypeError) as exc:
        raise ConfigurationError(f"{func_name!r}: cannot build an argument schema: {exc}") from exc
    input_schema.pop("title", None)  # the synthetic model's name means nothing to the model
    input_schema.setdefault("properties", {})

    if description is None:
        description = "\n\n".join(
            part for part in (doc.short_description, doc.long_description) if part
        )
    return FunctionSchema(
        name=func_name,
        description=description,
        input_schema=input_schema,
        output_schema=_output_schema(hints.get("return")),
        arguments_model=model,
        parameter_names=tuple(names),
    )


def _output_schema(annotation: Any) -> dict[str, Any] | None:
    if annotation is None or annotation is type(None) or annotation is Any:
        return None
    try:
        schema = pydantic.TypeAdapter(annotation).json_schema()
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError, TypeError):
        return None  # an output schema is a hint; a return type pydantic can't describe is fine
    return schema
