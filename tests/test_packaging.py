"""What installing the checkout puts into an environment: one import package,
``durable_agui``, and nothing that takes another distribution's place (the OpenAI Agents
SDK installs ``agents``). Building the wheel takes 3-6 s, the fresh venv 30-55 s."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

from tests.fresh_venv import Venv, copy_checkout, run

# Run in the fresh venv: where each top-level package comes from, and every file
# openai-agents installed that no longer has the content its RECORD names.
_INSPECT = """
import base64, hashlib, importlib.metadata as metadata, json
import agents
import durable_agui.api.app, durable_agui.worker
from agents import Agent, Runner

def files(name):
    dist = metadata.distribution(name)
    return dist, [f for f in dist.files if f.hash is not None]

openai_dist, openai_files = files("openai-agents")
changed = [
    str(f) for f in openai_files
    if base64.urlsafe_b64encode(hashlib.new(f.hash.mode, f.read_binary()).digest())
    .rstrip(b"=").decode() != f.hash.value
]
ours = {str(f) for f in metadata.distribution("durable-agui").files}
print(json.dumps({
    "agents": agents.__file__,
    "agents_from": str(openai_dist.locate_file("agents/__init__.py")),
    "durable_agui": durable_agui.__file__,
    "changed": changed,
    "shared": sorted(ours & {str(f) for f in openai_dist.files}),
    "top_level": metadata.distribution("durable-agui").read_text("top_level.txt"),
}))
"""


def test_wheel_holds_only_durable_agui(tmp_path: Path) -> None:
    checkout = copy_checkout(tmp_path)
    wheels = tmp_path / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "-q", str(checkout), "--no-deps", "-w", str(wheels)])

    (wheel,) = wheels.glob("durable_agui-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (top_level,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert archive.read(top_level).decode().split() == ["durable_agui"]
    dist_info = top_level.split("/")[0]
    assert {name.split("/")[0] for name in names} == {"durable_agui", dist_info}


def test_openai_agents_sdk_and_durable_agui_share_an_environment(packaging_venv: Venv) -> None:
    run([packaging_venv.python, "-m", "pip", "check"])
    found = json.loads(run([packaging_venv.python, "-c", _INSPECT]).stdout)

    assert found["agents"] == found["agents_from"]  # `import agents` is the SDK's
    assert found["changed"] == []  # no file of the SDK was overwritten
    assert found["shared"] == []
    assert found["top_level"].split() == ["durable_agui"]
    assert Path(found["durable_agui"]).parent.name == "durable_agui"
