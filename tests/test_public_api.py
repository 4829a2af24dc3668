from __future__ import annotations

import subprocess
import sys

import toolwire
import toolwire.errors


def test_all_is_sorted_and_complete() -> None:
    assert toolwire.__all__ == sorted(toolwire.__all__)
    for name in toolwire.__all__:
        assert hasattr(toolwire, name), name


def test_error_tree() -> None:
    assert issubclass(toolwire.ConfigurationError, ValueError)
    assert issubclass(toolwire.NameCollisionError, toolwire.ConfigurationError)
    assert issubclass(toolwire.MissingDependency, ImportError)
    assert issubclass(toolwire.ToolNotFound, LookupError)
    for name in toolwire.errors.__all__:
        kind = getattr(toolwire.errors, name)
        assert issubclass(kind, toolwire.ToolwireError | toolwire.ToolwireWarning), name
    assert issubclass(toolwire.ToolwireWarning, UserWarning)


BLOCK_EXTRAS = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"google", "openai", "anthropic", "mcp", "redis"}:
            raise ImportError(f"blocked {name}")
        return None
sys.meta_path.insert(0, Block())
import toolwire
import toolwire.providers.gemini
import toolwire.cli
assert "google" not in sys.modules
print("ok")
"""


def test_import_works_without_any_extra() -> None:
    result = subprocess.run(
        [sys.executable, "-c", BLOCK_EXTRAS], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


MISSING_GENAI = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "google":
            raise ImportError(f"blocked {name}")
        return None
sys.meta_path.insert(0, Block())
from toolwire.integrations.genai import genai_tool
from toolwire import MissingDependency
try:
    genai_tool([])
except MissingDependency as exc:
    assert isinstance(exc, ImportError)
    print(exc)
"""


def test_the_genai_integration_without_the_extra_names_it() -> None:
    result = subprocess.run(
        [sys.executable, "-c", MISSING_GENAI], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "google-genai is not installed; install it with: pip install 'toolwire[genai]' "
        "(from a checkout: pip install -e '.[genai]')"
    )
