"""Generate the typed Python client of the HTTP API (``unmask_client/api_client/``, part of the
``unmask-client`` distribution, clients/python) from the API's OpenAPI document with
openapi-python-client, or check that the committed one is current.

    python scripts/generate_client.py           # regenerate unmask_client/api_client/ (make client)
    python scripts/generate_client.py --check   # exit 1 and name the files that would change
    python scripts/generate_client.py --install-tool   # the pinned generator into .tools/

The generator is pinned (``GENERATOR``) and installed by ``make client-tool``
(``--install-tool``) into ``.tools/openapi-python-client`` without its dependencies: it
declares ``typer<0.28`` while Unmask runs a newer typer, which its command line works with;
installing it into the project's environment would downgrade typer. The generated code is
formatted by the project's ruff.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "unmask_client" / "api_client"
TOOL_DIR = ROOT / ".tools" / "openapi-python-client"
GENERATOR = "openapi-python-client==0.29.1"
CONFIG = {"project_name_override": "api_client", "package_name_override": "api_client"}


def openapi_document() -> dict[str, object]:
    """The API's OpenAPI document, as ``/v1/openapi.json`` serves it."""
    sys.path.insert(0, str(ROOT))
    from api.app import create_app
    from services.settings import Settings

    settings = Settings(_env_file=None, database_url="sqlite://", token_hmac_key="generate")  # type: ignore[call-arg]
    document: dict[str, object] = create_app(settings, senders={}).openapi()
    return document


def generator_document(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` as the generator reads it: the recursive ``JsonValue`` component (any JSON
    value storage holds, a union that refers to itself) becomes an unconstrained value, which
    openapi-python-client can parse (it drops every operation that refers to a recursive union).
    The client then sends configs as plain dicts; the server still enforces the rule."""
    out = json.loads(json.dumps(document))
    schemas = out.get("components", {}).get("schemas", {})
    if "JsonValue" in schemas:
        schemas["JsonValue"] = {"description": schemas["JsonValue"].get("description", "")}
    _plain_configs(out)
    return out


def _plain_configs(node: Any) -> None:
    """Evaluation configs (a protocol's ``config``, a job's ``config_overrides``: marked
    ``x-evaluation-config``) as plain JSON objects: the client passes dicts, the server's
    document states each field."""
    if isinstance(node, dict):
        if node.pop("x-evaluation-config", False):
            for key in ("properties", "propertyNames"):
                node.pop(key, None)
            node["additionalProperties"] = {"$ref": "#/components/schemas/JsonValue"}
        for value in node.values():
            _plain_configs(value)
    elif isinstance(node, list):
        for value in node:
            _plain_configs(value)


def tool_available() -> bool:
    """Whether the pinned generator is installed in ``.tools``."""
    return (TOOL_DIR / "openapi_python_client").is_dir()


def generate(output: Path) -> None:
    """Generate the package into ``output`` (replaced)."""
    if not tool_available():
        raise SystemExit(
            f"the client generator is not installed: run `make client-tool` ({GENERATOR} into "
            f"{TOOL_DIR.relative_to(ROOT)})"
        )
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "openapi.json"
        spec.write_text(
            json.dumps(generator_document(openapi_document()), indent=1, sort_keys=True)
        )
        config = Path(tmp) / "config.json"
        config.write_text(json.dumps(CONFIG))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(TOOL_DIR), str(ROOT)]),
            # The generator's post hooks run ruff: the project's, with the project's settings.
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        }
        out = Path(tmp) / "api_client"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "openapi_python_client",
                "generate",
                "--path",
                str(spec),
                "--meta",
                "none",
                "--output-path",
                str(out),
                "--config",
                str(config),
                "--overwrite",
            ],
            check=True,
            env=env,
            cwd=tmp,
            capture_output=True,
        )
        # Formatted inside the repository, so ruff reads the project's configuration.
        staging = ROOT / "unmask_client" / ".api_client.staging"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(out, staging, ignore=shutil.ignore_patterns(".ruff_cache"))
        ruff = [str(Path(sys.executable).parent / "ruff")]
        subprocess.run([*ruff, "check", "--fix-only", "-q", str(staging)], cwd=ROOT, check=False)
        subprocess.run([*ruff, "format", "-q", str(staging)], cwd=ROOT, check=True)
        shutil.rmtree(output, ignore_errors=True)
        shutil.move(str(staging), str(output))


def differences(a: Path, b: Path) -> list[str]:
    """Relative paths of files that differ, or exist on one side only, between two trees."""
    found: list[str] = []

    def walk(cmp: filecmp.dircmp[str], prefix: str) -> None:
        found.extend(f"{prefix}{n}" for n in (*cmp.left_only, *cmp.right_only, *cmp.diff_files))
        for name, sub in cmp.subdirs.items():
            walk(sub, f"{prefix}{name}/")

    walk(filecmp.dircmp(str(a), str(b), ignore=["__pycache__", ".ruff_cache"]), "")
    return sorted(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("--install-tool", action="store_true", help=f"install {GENERATOR}")
    args = parser.parse_args()
    if args.install_tool:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--upgrade",
                "--target",
                str(TOOL_DIR),
                GENERATOR,
            ],
            check=True,
        )
        return 0
    if not args.check:
        generate(PACKAGE)
        print(f"generated {PACKAGE.relative_to(ROOT)}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "api_client"
        generate(fresh)
        changed = differences(PACKAGE, fresh)
    if changed:
        print(
            "unmask_client/api_client/ differs from what the API generates (make client):", *changed
        )
        return 1
    print("unmask_client/api_client/ is current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
