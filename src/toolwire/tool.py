"""Tools, the ordered sets of them a model sees, and the ``@tool`` decorator."""

from __future__ import annotations

import copy
import hashlib
import inspect
import itertools
import math
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_args, overload

import jsonschema_rs

from toolwire._function_schema import FunctionSchema, Supplied, function_schema, json_path
from toolwire._text import clean_description
from toolwire._validation import (
    LEAVES,
    compile_validator,
    first_non_finite,
    path_order,
    plain_json,
)
from toolwire._values import argument_problem, canonical_json
from toolwire.errors import (
    ConfigurationError,
    InvalidArguments,
    SchemaConversionError,
    ToolwireError,
    ToolwireWarning,
)
from toolwire.grammar import Grammar, grammar_from_format
from toolwire.schema import bundle, short_text, unresolved_references

__all__ = [
    "NAME_LIMIT",
    "CallerKind",
    "CustomFormat",
    "Entity",
    "Tool",
    "ToolKind",
    "compile_validator",
    "exposed_name_for",
    "tool",
    "tool_from_definition",
]

EMPTY_OBJECT_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}

NAME_LIMIT = 64
_PORTABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
_NOT_PORTABLE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_ARGUMENT_ERRORS = 20

T = TypeVar("T")

ToolKind = Literal["function", "custom"]
"""A function tool takes JSON arguments; a custom tool (OpenAI, GPT-5 and later) takes free
text, optionally constrained by a grammar."""
Entity = Literal["tool", "resource", "prompt"]
"""What a call reaches, as a policy's rules tell them apart (``Rule(kind=)``): a tool, or, for
the MCP gateway, a server's resource (named by its URI) or prompt."""
_ENTITIES = frozenset(get_args(Entity))
CustomFormat = Grammar | Mapping[str, Any] | None
"""A custom tool's input format: None (or ``{"type": "text"}``) for free text, a
``Grammar``, or OpenAI's grammar format as a dict."""
_TEXT_ARGUMENT = "input"
CallerKind = Literal["direct", "code"]
"""Who makes a call: the model itself (``direct``), or code the model wrote, running in the
provider's code-execution container (``code``: programmatic tool calling)."""
_CALLER_KINDS: frozenset[str] = frozenset(get_args(CallerKind))
_DIRECT_ONLY = frozenset({"direct"})


@dataclass(frozen=True, kw_only=True, eq=False)
class Tool:
    """One tool: its name, what it does, the JSON Schema of its arguments, and its handler.

    The ``input_schema`` is the source of truth: providers get lowered copies of it, and
    arguments are always validated against it, so a keyword a provider cannot take never
    weakens checking. Tools are immutable; don't mutate the schemas you hand them.
    """

    name: str
    """The tool's own name (an MCP tool's name on its server)."""
    description: str | None = None
    """What the tool does, for the model."""
    input_schema: Mapping[str, Any] = field(default_factory=lambda: dict(EMPTY_OBJECT_SCHEMA))
    """JSON Schema of the arguments: a JSON object (anything else is refused)."""
    handler: Callable[..., Any] | None = None
    """Called with the validated arguments as keyword arguments; sync or async."""
    output_schema: Mapping[str, Any] | None = None
    """JSON Schema of the structured result, when known."""
    annotations: Mapping[str, Any] | None = None
    """MCP tool annotations (``readOnlyHint``, ``destructiveHint``, ...)."""
    title: str | None = None
    """A name for people (MCP's ``title``), never declared to a model. Part of the definition
    hash when set: people approving calls read it, so a changed title needs approval again,
    as a changed ``annotations.title`` does."""
    icons: tuple[Mapping[str, Any], ...] | None = None
    """Icons for people (MCP's ``icons``: ``src``, ``mimeType``, ``sizes``, ``theme``), never
    fetched by toolwire. Not part of the definition hash: a new icon URL needs no approval.
    Readers of untrusted definitions (the MCP hub, ``tool_from_definition``) keep only
    http(s) and ``data:image/`` sources."""
    parallel_safe: bool = True
    """False makes the executor run this tool alone, never beside another call."""
    timeout: float | None = None
    """Seconds a call may run; overrides the executor's timeout."""
    idempotent: bool = False
    """Running a call twice does no more than running it once: an executor with
    ``on_interrupted="rerun_idempotent"`` may run it again after a worker stopped mid-call."""
    needs_approval: bool = False
    """Every call needs approval whatever the policy allows (set by an MCP hub for a tool whose
    definition changed since it was approved)."""
    server_id: str | None = None
    """The server the tool comes from; such tools are exposed as ``server__name``."""
    providers: frozenset[str] | None = None
    """The providers this tool is declared to; None means all."""
    taints: frozenset[str] | None = None
    """The sources its output brings into the model's context (see ``Outcome.taint``); None
    means its server's name for a server's tool, nothing for the developer's own."""
    trusted: bool = False
    """Its output is trusted input (the application's own data, not text anyone else wrote):
    values it brings into the model's context count as trusted (see
    [`toolwire.provenance`][]). False (the default): its output is untrusted."""
    function: FunctionSchema | None = field(default=None, repr=False)
    """Set by ``@tool`` for tools made from a function: pydantic validates their arguments."""
    kind: ToolKind = "function"
    """``"custom"`` for an OpenAI custom tool: the model writes free text (checked against
    ``format``), which the handler gets as its one string argument. OpenAI is told it is a
    custom tool; every other provider gets a function with that one string parameter."""
    entity: Entity = "tool"
    """What its calls reach, for a policy (see [`Entity`][]): ``"resource"`` and ``"prompt"``
    are the reads and gets the MCP gateway makes of a server's resources and prompts, each
    a tool of its own named by its URI or prompt name."""
    format: CustomFormat = None
    """A custom tool's input: None for free text, or the ``Grammar`` the text must match
    (OpenAI's ``{"type": "grammar", "syntax", "definition"}`` is read as one); the text is
    checked before every call, on every provider."""
    input_examples: tuple[Mapping[str, Any], ...] = ()
    """Example arguments, shown to the model: Anthropic's ``input_examples``; folded into the
    description for the other providers. Each must fit the input schema (checked when the
    tool is made). Part of the definition hash when given."""
    callers: frozenset[CallerKind] = frozenset({"direct"})
    """Who may call it: the model (``"direct"``) and, with ``"code"``, code the model writes
    in the provider's code-execution container (programmatic tool calling: Anthropic's
    ``allowed_callers``, OpenAI's ``programmatic``). A call from a caller not listed is
    refused, never run. Part of the definition hash when it is not the default."""
    deferred: bool = False
    """Declared for loading on demand where the provider has tool search (its definition
    sent with ``defer_loading``, found by the model through a search); every tool is declared
    in full elsewhere. A toolset can defer tools by pattern too (``ToolSet(deferred=...)``)."""
    resources: Mapping[str, Any] | None = None
    """Other documents the input schema's references name, by URI (``{uri: schema}``): the
    validator resolves those references to them, and providers are sent them inlined. Part
    of the definition hash when given. Nothing is ever fetched."""
    external_refs: Literal["refuse", "unconstrained"] = "refuse"
    """What a reference to another document that is neither in ``resources`` nor a JSON
    Schema meta-schema (which the validator has built in) makes of the tool: ``"refuse"``
    (the default) refuses the tool, naming the reference; ``"unconstrained"`` accepts any
    value where it stands (noted by ``toolwire check``)."""
    _text_argument: str | None = field(default=None, init=False, repr=False)
    """A custom tool's one argument (see ``text_argument``)."""
    _validator: Any = field(default=None, init=False, repr=False)
    """The compiled jsonschema-rs validator, or why the schema has none (compiled once)."""
    is_async: bool = field(default=False, init=False, repr=False)
    """True when the handler is a coroutine function (run on the event loop, not a thread)."""
    context_parameter: str | None = field(default=None, init=False, repr=False)
    """The handler's parameter passed the call's [`CallContext`][toolwire.CallContext], for a
    function that asks for it (no argument: the model is never told of it)."""
    needs_context: bool = field(default=False, init=False, repr=False)
    """Its calls are given their context: the handler asks for it, or the application
    supplies some of its parameters (``@tool(supplied=...)``)."""
    _definition_hash: str | None = field(default=None, init=False, repr=False)
    _declared_schema: Mapping[str, Any] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigurationError(f"a tool needs a non-empty string name, got {self.name!r}")
        if not isinstance(self.input_schema, Mapping):
            raise ConfigurationError(
                f"tool {self.name!r}: the input schema must be a JSON object (a mapping), "
                f"not {type(self.input_schema).__name__}"
            )
        if self.taints is not None:
            given: Any = self.taints  # a string or any iterable of strings is accepted
            taints = frozenset((given,) if isinstance(given, str) else given)
            if not all(isinstance(t, str) for t in taints):
                raise ConfigurationError(f"tool {self.name!r}: taints are strings: {taints!r}")
            object.__setattr__(self, "taints", taints)
        if self.title is not None and not isinstance(self.title, str):
            raise ConfigurationError(f"tool {self.name!r}: the title must be a string or None")
        if self.icons is not None:
            icons = tuple(self.icons)  # a list is taken; the tool keeps an immutable copy
            if not all(isinstance(icon, Mapping) for icon in icons):
                raise ConfigurationError(f"tool {self.name!r}: icons are mappings: {icons!r}")
            object.__setattr__(self, "icons", icons)
        handler = self.handler
        if handler is not None:
            is_async = inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
                getattr(handler, "__call__", None)  # noqa: B004 - objects with an async __call__
            )
            object.__setattr__(self, "is_async", is_async)
        if self.function is not None and self.function.context_parameter is not None:
            object.__setattr__(self, "context_parameter", self.function.context_parameter)
        if self.function is not None and (self.context_parameter or self.function.supplied):
            object.__setattr__(self, "needs_context", True)
        if self.entity not in _ENTITIES:
            raise ConfigurationError(
                f"tool {self.name!r}: entity is 'tool', 'resource' or 'prompt', not {self.entity!r}"
            )
        if self.kind == "custom":
            self._set_up_custom()
        elif self.kind != "function":
            raise ConfigurationError(
                f"tool {self.name!r}: kind is 'function' or 'custom', not {self.kind!r}"
            )
        elif self.format is not None:
            raise ConfigurationError(
                f"tool {self.name!r}: a format is for custom tools; pass kind='custom'"
            )
        self._check_references()
        if self.input_examples:
            self._check_examples()
        self._check_callers()

    def _check_references(self) -> None:
        """Refuse references to documents the tool was not given (unless told to take them as
        unconstrained): the part they name would accept anything, which fails open."""
        if self.resources is not None:
            if not isinstance(self.resources, Mapping) or not all(
                isinstance(uri, str) and isinstance(body, Mapping | bool)
                for uri, body in self.resources.items()
            ):
                raise ConfigurationError(
                    f"tool {self.name!r}: resources map URIs to schemas ({{uri: schema}})"
                )
            object.__setattr__(self, "resources", dict(self.resources))
        if self.external_refs not in ("refuse", "unconstrained"):
            raise ConfigurationError(
                f"tool {self.name!r}: external_refs is 'refuse' or 'unconstrained', not "
                f"{self.external_refs!r}"
            )
        if self.external_refs == "unconstrained" or self.function is not None:
            return
        try:
            unresolved = unresolved_references(self.input_schema, self.resources)
        except SchemaConversionError:
            return  # beyond the bounds: validation says so, naming the tool
        if unresolved:
            reference, where = unresolved[0]
            more = f" (and {len(unresolved) - 1} more)" if len(unresolved) > 1 else ""
            raise ConfigurationError(
                f"tool {self.name!r}: its input schema references {reference!r} at {where}"
                f"{more}, another document, which is never fetched: give it as "
                f"resources={{uri: schema}}, or pass external_refs='unconstrained' to accept "
                "any value there"
            )

    @property
    def declared_schema(self) -> Mapping[str, Any]:
        """The input schema as providers are sent it before their own lowering: one document,
        its references JSON pointers from the root (embedded resources, anchors and the given
        ``resources`` resolved); the input schema itself when it has nothing to resolve."""
        declared = self._declared_schema
        if declared is None:
            declared, _ = bundle(self.input_schema, self.resources)
            object.__setattr__(self, "_declared_schema", declared)
        return declared

    def _check_callers(self) -> None:
        given: Any = self.callers
        callers = frozenset((given,) if isinstance(given, str) else given)
        if not callers or not callers <= _CALLER_KINDS:
            raise ConfigurationError(
                f"tool {self.name!r}: callers are 'direct' and/or 'code', not {given!r}"
            )
        object.__setattr__(self, "callers", callers)
        if not isinstance(self.deferred, bool):
            raise ConfigurationError(f"tool {self.name!r}: deferred is True or False")

    def _set_up_custom(self) -> None:
        """The grammar compiled, and the input schema's one string argument found (an object
        of one ``input`` string when no schema was given)."""
        object.__setattr__(self, "format", grammar_from_format(self.format))
        schema = self.input_schema
        if schema == EMPTY_OBJECT_SCHEMA:
            schema = _text_schema(_TEXT_ARGUMENT, "The tool's input, as text.")
            object.__setattr__(self, "input_schema", schema)
        name = _text_property(schema)
        if name is None:
            raise ConfigurationError(
                f"custom tool {self.name!r}: the input schema must be an object with exactly "
                "one property, a required string (the text the model writes), or left out"
            )
        object.__setattr__(self, "_text_argument", name)

    @property
    def grammar(self) -> Grammar | None:
        """A custom tool's grammar (its ``format`` as a ``Grammar``), or None."""
        return self.format if isinstance(self.format, Grammar) else None

    @property
    def text_argument(self) -> str | None:
        """A custom tool's one argument, which holds the model's text (None for a function
        tool)."""
        return self._text_argument

    @property
    def qualified_name(self) -> str:
        """``server/name`` for a server's tool, else ``name``: what policies match."""
        return f"{self.server_id}/{self.name}" if self.server_id else self.name

    def _check_examples(self) -> None:
        """Keep the examples as an immutable copy, each checked against the input schema.

        Raises:
            ConfigurationError: an example that is no object, or does not fit the schema;
                examples for a custom tool (its input is text).
        """
        given: Any = self.input_examples
        if isinstance(given, Mapping) or not isinstance(given, Iterable):
            raise ConfigurationError(f"tool {self.name!r}: input_examples is a list of objects")
        examples = tuple(given)
        if self.kind == "custom":
            raise ConfigurationError(
                f"custom tool {self.name!r}: its input is text, so it takes no input_examples"
            )
        for number, example in enumerate(examples, 1):
            if not isinstance(example, Mapping):
                raise ConfigurationError(
                    f"tool {self.name!r}: input example {number} is not an object"
                )
            try:
                self.validate_arguments(example)
            except ToolwireError as exc:
                raise ConfigurationError(
                    f"tool {self.name!r}: input example {number} does not fit its schema: {exc}"
                ) from None
        kept = tuple(copy.deepcopy(dict(example)) for example in examples)
        object.__setattr__(self, "input_examples", kept)

    @property
    def definition_hash(self) -> str:
        """What a model is told about the tool (description, input schema, annotations), and
        what people approving its calls read (its title), hashed: a recorded decision holds
        only while this is unchanged."""
        digest = self._definition_hash
        if digest is None:
            digest = definition_hash(
                self.description or "",
                self.input_schema,
                self.annotations,
                self.grammar,
                title=self.title,
                callers=self.callers,
                examples=self.input_examples,
                resources=self.resources,
            )
            object.__setattr__(self, "_definition_hash", digest)
        return digest

    def validate_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check ``arguments`` against the input schema; returns the handler's keyword arguments.

        Function tools are validated (and converted, e.g. into pydantic models) by pydantic;
        other tools by jsonschema-rs, for the schema's own dialect, with formats asserted,
        patterns matched in linear time and references to other documents never fetched (the
        part they name accepts any value). ``NaN`` and ``Infinity`` are never valid: they are
        not JSON numbers.

        A custom tool's text is then checked against its grammar.

        Raises:
            InvalidArguments: listing each failing field with its JSON path (a custom tool's
                text that its grammar refuses, at the path of its one argument).
            ConfigurationError: when the input schema itself cannot validate arguments (it
                breaks JSON Schema's rules, or has a pattern the linear-time engine cannot
                compile), naming the tool and the reason.
        """
        if arguments.__class__ is not dict and not isinstance(arguments, Mapping):
            raise InvalidArguments(
                self.name, [("$", f"expected an object, got {type(arguments).__name__}")]
            )
        if self.function is not None:
            for value in arguments.values():  # the common case: flat, no float that is NaN
                kind = value.__class__
                if not (kind in LEAVES or (kind is float and math.isfinite(value))):
                    where = first_non_finite(arguments)
                    if where is not None:
                        raise InvalidArguments(self.name, [where])
                    break
            kwargs = self.function.validate(self.name, dict(arguments))
            if self.format is not None:
                self._check_text(kwargs)
            return kwargs
        problem = argument_problem(arguments)
        if problem is not None:
            raise InvalidArguments(self.name, [("$", problem)])
        validator = self._argument_validator()
        try:
            valid = validator.is_valid(arguments)
        except ValueError:  # a Mapping or str subclass jsonschema-rs does not read: a plain copy
            arguments = plain_json(arguments)
            try:
                valid = validator.is_valid(arguments)
            except ValueError as exc:
                raise InvalidArguments(self.name, [("$", f"not JSON: {exc}")]) from None
        if valid:
            if self.format is not None:
                self._check_text(arguments)
            return dict(arguments)
        failures = sorted(
            itertools.islice(validator.iter_errors(arguments), _MAX_ARGUMENT_ERRORS),
            key=lambda error: path_order(error.instance_path),
        )
        raise InvalidArguments(
            self.name,
            [(json_path(error.instance_path), short_text(error.message)) for error in failures],
        )

    def _check_text(self, arguments: Mapping[str, Any]) -> None:
        """The custom tool's text checked against its grammar (arguments already valid)."""
        grammar, name = self.grammar, self._text_argument
        assert grammar is not None
        assert name is not None
        problem = grammar.problem(arguments[name])
        if problem is not None:
            raise InvalidArguments(self.name, [(json_path((name,)), problem)])

    def check_schema(self) -> None:
        """Make sure the input schema can validate arguments (compiling it, once).

        Raises:
            ConfigurationError: naming the tool and why its schema cannot validate arguments.
        """
        if self.function is None:
            self._argument_validator()

    def _argument_validator(self) -> jsonschema_rs.Validator:
        validator = self._validator
        if validator is None:
            validator = compile_validator(self.input_schema, self.resources)
            object.__setattr__(self, "_validator", validator)
        if isinstance(validator, str):
            raise ConfigurationError(
                f"tool {self.qualified_name!r}: its input schema cannot validate arguments: "
                f"{validator}"
            )
        return validator  # type: ignore[no-any-return]


def definition_hash(
    description: str,
    schema: Any,
    annotations: Any,
    grammar: Grammar | None = None,
    *,
    title: str | None = None,
    examples: tuple[Mapping[str, Any], ...] = (),
    callers: frozenset[str] = frozenset({"direct"}),
    resources: Mapping[str, Any] | None = None,
) -> str:
    """A tool definition's description, input schema, annotations, grammar, title, input
    examples and callers, hashed."""
    definition = {"description": description, "schema": schema, "annotations": annotations}
    # Each only when set: the hashes of tools without one stay as they were.
    if grammar is not None:
        definition["grammar"] = grammar.as_format()
    if title is not None:
        definition["title"] = title
    if examples:
        definition["input_examples"] = [dict(example) for example in examples]
    if callers != _DIRECT_ONLY:
        definition["callers"] = sorted(callers)
    if resources:
        definition["resources"] = dict(resources)
    payload = canonical_json(definition)
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def _text_schema(name: str, description: str | None = None) -> dict[str, Any]:
    """The input schema of a custom tool whose text is the argument ``name``."""
    prop: dict[str, Any] = {"type": "string"}
    if description:
        prop["description"] = description
    return {
        "type": "object",
        "properties": {name: prop},
        "required": [name],
        "additionalProperties": False,
    }


def _text_property(schema: Mapping[str, Any]) -> str | None:
    """The name of ``schema``'s one property when it is a required string (what a custom
    tool's input schema must be), else None."""
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, Mapping):
        return None
    if len(properties) != 1:
        return None
    ((name, prop),) = properties.items()
    required = schema.get("required")
    if not isinstance(prop, Mapping) or prop.get("type") != "string":
        return None
    if not isinstance(required, list | tuple) or name not in required:
        return None
    return str(name)


@overload
def tool(func: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parallel_safe: bool = True,
    annotations: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    idempotent: bool = False,
    taints: Iterable[str] | str | None = None,
    custom: bool | CustomFormat = False,
    input_examples: Iterable[Mapping[str, Any]] = (),
    callers: Iterable[CallerKind] = ("direct",),
    deferred: bool = False,
    trusted: bool = False,
    supplied: Supplied | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parallel_safe: bool = True,
    annotations: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    idempotent: bool = False,
    taints: Iterable[str] | str | None = None,
    custom: bool | CustomFormat = False,
    input_examples: Iterable[Mapping[str, Any]] = (),
    callers: Iterable[CallerKind] = ("direct",),
    deferred: bool = False,
    trusted: bool = False,
    supplied: Supplied | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a [`Tool`][] from a function, sync or async.

    The argument schema comes from the type hints (through pydantic), parameter descriptions
    from the docstring (Google, NumPy or reST style), the tool's description from the rest of
    the docstring. Parameters with defaults are optional and keep their defaults.

    Use bare (``@tool``) or with options (``@tool(name="search", parallel_safe=False)``);
    ``taints=("web",)`` names the sources its output brings into the model's context (see
    ``Outcome.taint``); ``trusted=True`` says its output is trusted input (see
    ``Tool.trusted``).
    A ``functools.partial`` is a tool of the function it wraps, without the arguments it binds.

    ``custom=True`` makes an OpenAI custom tool of a function of one required ``str``
    parameter: the model writes free text, passed as that parameter; ``custom=`` a ``Grammar``
    (or OpenAI's grammar format as a dict) also constrains the text, checked before every call
    (see ``Tool.kind``).

    ``input_examples`` are example arguments shown to the model (see ``Tool.input_examples``);
    ``callers=("direct", "code")`` lets code the model writes call it too (see
    ``Tool.callers``); ``deferred=True`` loads it on demand where the provider has tool
    search (see ``Tool.deferred``).

    A parameter annotated [`CallContext`][toolwire.CallContext] (``CallContext[MyDeps]``, or a
    subclass) is no argument: the model is never told of it, and each call passes it the call's
    context (its run, id, principal, taint and the turn's ``deps``).

    Raises:
        ConfigurationError: when the function cannot be a tool (see
            ``function_schema``), in one line naming what to change; for ``custom``, when it
            does not take exactly one required ``str`` argument or the grammar does not
            compile.
        MissingDependency: for a Lark grammar without LLGuidance (``toolwire[lark]``).

    Warns:
        ToolwireWarning: when the function has no docstring and no ``description`` is given,
            and when an argument has no type hint (the model would be told no type for it,
            and any value would pass; annotate it ``Any`` to mean that).
    """

    def build(f: Callable[..., Any]) -> Tool:
        schema = function_schema(f, name=name, description=description, supplied=supplied)
        for parameter, marker in schema.unknown_markers:
            _warn_caller(
                f"tool {schema.name!r}: parameter {parameter!r} is annotated with {marker}, "
                "which toolwire does not understand: the model is asked for it as an "
                "argument. If the application supplies it (a framework's dependency), say "
                f"so: @tool(supplied={{{parameter!r}: lambda context: ...}})"
            )
        if custom is not False and _text_property(schema.input_schema) is None:
            raise ConfigurationError(
                f"custom tool {schema.name!r}: the function must take exactly one required "
                "str parameter (the text the model writes); its arguments are "
                f"{list(schema.parameter_names) or 'none'}"
            )
        if description is None and not schema.description:
            _warn_caller(
                f"tool {schema.name!r} has no docstring and no description: the model will see "
                "no description of it (add a docstring, or pass description=...)"
            )
        if schema.untyped:
            _warn_caller(_untyped_note(schema.name, schema.untyped))
        return Tool(
            name=schema.name,
            description=schema.description,
            input_schema=schema.input_schema,
            output_schema=schema.output_schema,
            handler=f,
            annotations=annotations,
            parallel_safe=parallel_safe,
            timeout=timeout,
            idempotent=idempotent,
            taints=None
            if taints is None
            else frozenset((taints,) if isinstance(taints, str) else taints),
            function=schema,
            kind="function" if custom is False else "custom",
            format=None if custom is True or custom is False else custom,
            input_examples=tuple(input_examples),
            callers=_caller_kinds(callers),
            deferred=deferred,
            trusted=trusted,
        )

    return build(func) if func is not None else build


def _untyped_note(name: str, untyped: tuple[str, ...]) -> str:
    """The warning for a tool's parameters without a type hint."""
    shown = ", ".join(repr(parameter) for parameter in untyped[:5])
    more = f" and {len(untyped) - 5} more" if len(untyped) > 5 else ""
    which, it = ("parameter", "it") if len(untyped) == 1 else ("parameters", "them")
    return (
        f"tool {name!r}: {which} {shown}{more} without a type hint: the model is told no type "
        f"for {it} and any value is accepted (annotate {it}, e.g. `{untyped[0]}: str`, or "
        "`: Any` to accept any JSON value)"
    )


def _caller_kinds(callers: Iterable[CallerKind] | CallerKind) -> frozenset[CallerKind]:
    """``callers`` as a set (a lone string is one caller; ``Tool`` checks the kinds)."""
    given: Any = (callers,) if isinstance(callers, str) else callers
    return frozenset(given)


def _warn_caller(message: str) -> None:
    """Warn about the caller's code: the first frame outside toolwire (the ``@tool`` line, or
    the ``ToolSet([...])`` a bare function was passed to)."""
    level, frame = 2, sys._getframe(1)
    while frame.f_back is not None and _is_toolwire(frame.f_globals.get("__name__", "")):
        frame = frame.f_back
        level += 1
    warnings.warn(message, ToolwireWarning, stacklevel=level)


def _is_toolwire(module: str) -> bool:
    return module == "toolwire" or module.startswith("toolwire.")


_ICON_KEYS = ("src", "mimeType", "sizes", "theme")
_ICON_CAP = 16
"""Icons kept of one tool."""
_ICON_SOURCE_CAP = 65_536
"""Characters an icon's ``src`` may have (a ``data:`` URI holds the whole image)."""
_TITLE_CAP = 256
"""Characters of a title kept."""


def safe_icons(icons: Any) -> tuple[dict[str, Any], ...] | None:
    """The icons of an untrusted definition worth keeping: at most 16, each with a string
    ``src`` that is an ``http://``, ``https://`` or ``data:image/`` URI of at most 64 Ki
    characters (``file:``, ``javascript:`` and the like are dropped), and only the keys
    ``src``, ``mimeType``, ``sizes`` and ``theme``; None when none is left. Nothing is
    fetched."""
    if not isinstance(icons, list | tuple):
        return None
    kept: list[dict[str, Any]] = []
    for icon in icons:
        if len(kept) >= _ICON_CAP:
            break
        src = icon.get("src") if isinstance(icon, Mapping) else None
        if not isinstance(src, str) or len(src) > _ICON_SOURCE_CAP:
            continue
        if not src[:11].lower().startswith(("http://", "https://", "data:image/")):
            continue
        kept.append({key: icon[key] for key in _ICON_KEYS if key in icon})
    return tuple(kept) or None


def clean_title(title: Any) -> str | None:
    """An untrusted title as a tool keeps it: invisible characters removed, at most 256
    characters; None when it is not a string or is blank."""
    if not isinstance(title, str):
        return None
    cleaned = clean_description(title).strip()[:_TITLE_CAP]
    return cleaned or None


_SCHEMA_KEYS = ("input_schema", "inputSchema", "parameters")
_OUTPUT_SCHEMA_KEYS = ("output_schema", "outputSchema")


def tool_from_definition(definition: Mapping[str, Any]) -> Tool:
    """A [`Tool`][] (without a handler) from a definition as JSON has it.

    Reads ``name``, ``description``, the input schema as ``input_schema`` (Anthropic),
    ``inputSchema`` (MCP) or ``parameters`` (OpenAI, Gemini), the output schema as
    ``output_schema`` or ``outputSchema``, ``annotations``, ``title`` (else the annotations'
    ``title``) and ``icons`` (only http(s) and ``data:image/`` ones), and Anthropic's
    ``input_examples`` (each checked against the input schema); other keys are ignored, and an
    OpenAI Chat ``{"type": "function", "function": {...}}`` is read from its ``function``. An
    OpenAI custom tool (``{"type": "custom", name, description, format}``, or Chat's
    ``{"type": "custom", "custom": {...}}``) is read as one, with its ``format``. Such a tool can
    be declared; a call of it is answered with an error, as it has nothing to run.

    Raises:
        ConfigurationError: when the definition has no string name, gives its input schema
            twice, a field has the wrong type, or an input example does not fit the schema.
    """
    kind = definition.get("type")
    inner = definition.get(kind) if kind in ("function", "custom") else None
    if isinstance(inner, Mapping):
        definition = inner
    name = definition.get("name")
    if not isinstance(name, str):
        raise ConfigurationError(
            f"a tool definition needs a string 'name' (it has keys {sorted(map(str, definition))})"
        )
    schema_keys = [key for key in _SCHEMA_KEYS if key in definition]
    output_keys = [key for key in _OUTPUT_SCHEMA_KEYS if key in definition]
    for keys in (schema_keys, output_keys):
        if len(keys) > 1:
            raise ConfigurationError(
                f"tool definition {name!r} gives its schema as both {keys[0]!r} and {keys[1]!r}"
            )
    description = definition.get("description")
    if description is not None and not isinstance(description, str):
        raise ConfigurationError(
            f"tool definition {name!r}: the description is a {type(description).__name__}, "
            "not a string"
        )
    output_schema = definition[output_keys[0]] if output_keys else None
    annotations = definition.get("annotations")
    for what, value in (("output schema", output_schema), ("annotations", annotations)):
        if value is not None and not isinstance(value, Mapping):
            raise ConfigurationError(
                f"tool definition {name!r}: the {what} must be a JSON object (a mapping), "
                f"not {type(value).__name__}"
            )
    title = clean_title(definition.get("title"))
    if title is None and annotations is not None:
        title = clean_title(annotations.get("title"))
    icons = safe_icons(definition.get("icons"))
    if kind == "custom":
        return Tool(
            name=name,
            description=description,
            kind="custom",
            format=definition.get("format"),
            annotations=annotations,
            title=title,
            icons=icons,
        )
    examples = definition.get("input_examples", ())
    return Tool(
        name=name,
        description=description,
        input_schema=definition[schema_keys[0]] if schema_keys else dict(EMPTY_OBJECT_SCHEMA),
        output_schema=output_schema,
        annotations=annotations,
        title=title,
        icons=icons,
        input_examples=examples if examples is not None else (),
        deferred=definition.get("defer_loading") is True,
    )


def exposed_name_for(name: str, server_id: str | None = None) -> str:
    """The portable name for a tool before collisions are resolved.

    ``server__name`` when the tool has a server; characters outside ``[A-Za-z0-9_-]`` become
    ``_``; a leading digit or dash gets a ``_`` prefix; names over 64 characters are cut and
    end with a hash of the full name, so two long names stay distinct.
    """
    raw = f"{server_id}__{name}" if server_id else name
    if _PORTABLE_NAME.fullmatch(raw):
        return raw
    candidate = _NOT_PORTABLE.sub("_", raw)
    if not candidate or not (candidate[0].isalpha() or candidate[0] == "_"):
        candidate = "_" + candidate
    if len(candidate) > NAME_LIMIT:
        digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        candidate = f"{candidate[: NAME_LIMIT - 9]}_{digest}"
    return candidate


def taints_of(tool: Tool) -> frozenset[str]:
    """The sources a call of ``tool`` brings into the model's context: its ``taints``, else
    its server's name."""
    if tool.taints is not None:
        return tool.taints
    return frozenset((tool.server_id,)) if tool.server_id else frozenset()
