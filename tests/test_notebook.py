"""notebooks/run_analysis.ipynb runs top to bottom on a real (small) run directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "run_analysis.ipynb"


@pytest.mark.own_ray
def test_run_analysis_notebook_executes(cli_run, monkeypatch):
    out, _ = cli_run
    monkeypatch.setenv("ISLANDS_RUN_DIR", str(out))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                     for o in outputs)
    assert f"run {out}" in text and "reports from 2 islands" in text
    assert "got_migrants" in text  # the migration-effect table was computed
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the plots were drawn
    assert os.environ["ISLANDS_RUN_DIR"] == str(out)
