"""A Python callable's signature as a JSON Schema, and the validator for its arguments.

Only pydantic's public API is used: the parameters become the fields of a model made with
``create_model``; the model gives both the schema and the validation, so what the model is
told and what is checked cannot drift apart. A parameter annotated ``CallContext`` is no
argument: it is passed the call's context, and the model is never told of it.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

import docstring_parser
import pydantic

from toolwire.errors import ConfigurationError, InvalidArguments

__all__ = [
    "CONTEXT_FIELDS",
    "FunctionSchema",
    "InjectedContext",
    "Supplied",
    "Supplier",
    "function_schema",
    "json_path",
]


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    """What ``@tool`` learns from a function."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    arguments_model: type[pydantic.BaseModel]
    parameter_names: tuple[str, ...]
    """The arguments' parameter names in signature order; field ``i`` of the model is
    parameter ``i``."""
    context_parameter: str | None = None
    """The parameter passed the call's context, when the function asks for it."""
    context_type: type[Any] | None = None
    """What that context is made as: ``CallContext``, or the subclass it is annotated with."""
    untyped: tuple[str, ...] = ()
    """The arguments without a type hint: the model is told no type for them, and any value
    passes (``Any`` said explicitly is a hint)."""
    supplied: tuple[tuple[str, Callable[[Any], Any]], ...] = ()
    """The parameters the application supplies (``@tool(supplied=...)``), each with what
    makes its value from the call's context: no arguments, never shown to the model."""
    unknown_markers: tuple[tuple[str, str], ...] = ()
    """Arguments whose ``Annotated`` metadata neither pydantic nor toolwire understands (a
    framework's own marker, such as a dependency it injects), with the marker: each is
    still an argument the model is asked for, which ``@tool`` warns about."""

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


Supplier = Callable[[Any], Any]
"""What makes a supplied parameter's value from the call's ``CallContext``."""
Supplied = Mapping[str, Supplier] | Callable[[inspect.Parameter], Supplier | None]
"""Which parameters the application supplies: by name, or a callable of each parameter
(its annotation as resolved, ``Annotated`` metadata included) giving its supplier or None."""


def function_schema(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    supplied: Supplied | None = None,
) -> FunctionSchema:
    """Build the schema and validator of ``func`` from its type hints and docstring.

    ``func`` may be a function, a method or a ``functools.partial`` of one (its bound
    arguments are no tool arguments; name, hints and docstring are the wrapped function's).
    ``supplied`` names the parameters the application supplies (see [`Supplied`][]).

    Raises:
        ConfigurationError: for ``*args``/``**kwargs``, positional-only parameters, more than
            one ``CallContext`` parameter, or hints pydantic cannot turn into a schema.
    """
    target, bound = _unwrap_partial(func)
    func_name = name or getattr(target, "__name__", None) or type(target).__name__
    doc = docstring_parser.parse(inspect.getdoc(target) or "")
    param_docs = {p.arg_name: p.description for p in doc.params if p.description}
    try:
        hints = get_type_hints(target, include_extras=True)
    except (NameError, TypeError) as exc:
        raise ConfigurationError(f"cannot resolve the type hints of {func_name!r}: {exc}") from exc

    fields: dict[str, Any] = {}
    names: list[str] = []
    untyped: list[str] = []
    context_parameter: str | None = None
    context_type: type[Any] | None = None
    suppliers: list[tuple[str, Supplier]] = []
    markers: list[tuple[str, str]] = []
    for param in inspect.signature(func).parameters.values():
        if param.name in bound:
            continue  # set by the partial
        supplier = _supplier(
            func_name, param.replace(annotation=hints.get(param.name, Any)), supplied
        )
        if supplier is not None:
            suppliers.append((param.name, supplier))
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ConfigurationError(
                f"{func_name!r}: parameter {param.name!r} must be a keyword parameter to be a "
                "tool argument"
            )
        annotation = hints.get(param.name, Any)
        injected = _context_class(func_name, param.name, annotation)
        if injected is not None:
            if context_parameter is not None:
                raise ConfigurationError(
                    f"{func_name!r}: parameters {context_parameter!r} and {param.name!r} both "
                    "ask for the call's context; keep one"
                )
            context_parameter, context_type = param.name, injected
            continue
        if param.name not in hints:
            untyped.append(param.name)
        marker = _unknown_marker(annotation)
        if marker is not None:
            markers.append((param.name, marker))
        default = ... if param.default is param.empty else param.default
        # Fields are named p0, p1, ... with the parameter as alias, so parameter names such as
        # `schema` or `model_config` cannot clash with BaseModel's attributes.
        fields[f"p{len(names)}"] = (
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
        raise _schema_error(func_name, names, fields, exc) from exc
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
        context_parameter=context_parameter,
        context_type=context_type,
        untyped=tuple(untyped),
        supplied=tuple(suppliers),
        unknown_markers=tuple(markers),
    )


def _supplier(
    func_name: str, param: inspect.Parameter, supplied: Supplied | None
) -> Supplier | None:
    if supplied is None:
        return None
    if isinstance(supplied, Mapping):
        found = supplied.get(param.name)
    else:
        try:
            found = supplied(param)
        except Exception as exc:
            raise ConfigurationError(
                f"{func_name!r}: supplied= raised {type(exc).__name__} for parameter "
                f"{param.name!r}: {exc}"
            ) from exc
    if found is not None and not callable(found):
        raise ConfigurationError(
            f"{func_name!r}: the supplier of parameter {param.name!r} is a callable of the "
            f"call's context, not {found!r}"
        )
    return found


# Metadata pydantic reads (constraints, validators, fields, JSON Schema) and documentation.
_UNDERSTOOD_MODULES = ("pydantic", "annotated_types", "typing", "typing_extensions", "toolwire")


def _unknown_marker(annotation: Any) -> str | None:
    """The first ``Annotated`` metadata of ``annotation`` that neither pydantic nor toolwire
    understands, as text; None when there is none."""
    if get_origin(annotation) is not Annotated:
        return None
    for meta in annotation.__metadata__:
        if isinstance(meta, str | int | float | bool | type(None)):
            continue  # a note (pydantic lets it be)
        if hasattr(meta, "__get_pydantic_core_schema__") or hasattr(
            meta, "__get_pydantic_json_schema__"
        ):
            continue
        module = (getattr(type(meta), "__module__", "") or "").split(".", 1)[0]
        if module in _UNDERSTOOD_MODULES:
            continue
        return repr(meta)[:120]
    return None


class InjectedContext:
    """The base of ``toolwire.CallContext``: a parameter annotated with a subclass is given
    the call's context instead of an argument. It sits here, below the tools, so that
    recognising the annotation needs nothing above them."""

    __slots__ = ()


CONTEXT_FIELDS = ("call", "arguments", "principal", "run_id", "taint", "deps", "resume")
"""The fields a call's context is made from (a subclass must be constructible from them)."""


def _unwrap_partial(func: Callable[..., Any]) -> tuple[Callable[..., Any], frozenset[str]]:
    """The function a ``functools.partial`` wraps and the names its keywords bind (``func``
    itself and none for anything else). Nested partials are flattened by ``partial``."""
    if isinstance(func, functools.partial):
        return func.func, frozenset(func.keywords)
    return func, frozenset()


def _context_class(func_name: str, param: str, annotation: Any) -> type[Any] | None:
    """The ``CallContext`` class ``annotation`` asks for (seen through ``Annotated`` and
    ``Optional``), or None for an argument.

    Raises:
        ConfigurationError: for a context class that cannot be made from a call's context, or
            a union of a context with other types.
    """
    annotation = _unannotated(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        members = [_unannotated(a) for a in get_args(annotation) if a is not type(None)]
        if not any(_is_context(m) for m in members):
            return None
        if len(members) > 1:
            raise ConfigurationError(
                f"{func_name!r}: parameter {param!r} is a union of CallContext and other types; "
                "annotate it CallContext (or CallContext | None) alone"
            )
        annotation = members[0]
    if not _is_context(annotation):
        return None
    kind: type[Any] = get_origin(annotation) or annotation
    try:
        inspect.signature(kind).bind(**dict.fromkeys(CONTEXT_FIELDS))
    except TypeError:
        raise ConfigurationError(
            f"{func_name!r}: parameter {param!r} is annotated {kind.__qualname__}, which "
            "cannot be made from CallContext's fields alone; give its own fields defaults"
        ) from None
    return kind


def _unannotated(annotation: Any) -> Any:
    return get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation


def _is_context(annotation: Any) -> bool:
    kind = get_origin(annotation) or annotation
    return isinstance(kind, type) and issubclass(kind, InjectedContext)


def _schema_error(
    func_name: str, names: list[str], fields: dict[str, Any], exc: Exception
) -> ConfigurationError:
    """One line naming the parameter whose hint pydantic cannot turn into a schema (pydantic's
    own message runs over several paragraphs)."""
    for name, (annotation, _) in zip(names, fields.values(), strict=True):
        try:
            pydantic.TypeAdapter(annotation).json_schema()
        except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError, TypeError):
            return ConfigurationError(
                f"{func_name!r}: parameter {name!r} is annotated {_type_name(annotation)}, which "
                "pydantic cannot describe as JSON Schema; use a type pydantic knows (a pydantic "
                "model, a dataclass, a TypedDict), or annotate it toolwire.CallContext if it is "
                "a dependency rather than an argument"
            )
    [first_line, *_] = str(exc).strip().splitlines() or [type(exc).__name__]
    return ConfigurationError(f"{func_name!r}: cannot build an argument schema: {first_line}")


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__qualname__
    return repr(annotation).replace("typing.", "")


def _output_schema(annotation: Any) -> dict[str, Any] | None:
    if annotation is None or annotation is type(None) or annotation is Any:
        return None
    try:
        schema = pydantic.TypeAdapter(annotation).json_schema()
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError, TypeError):
        return None  # an output schema is a hint; a return type pydantic can't describe is fine
    return schema
