"""The ``toolwire`` command's parts, by group of commands (the parser and ``main`` are in
``toolwire.cli``)."""
