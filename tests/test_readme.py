"""The README's example runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "the README has no python example"
    # cache=True needs a file: write the example as a module and run it
    script = tmp_path / "readme_example.py"
    script.write_text("\n".join(blocks))
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__", "__file__": str(script)}
    exec(compile(script.read_text(), str(script), "exec"), namespace)
    assert namespace["row"]["mean_err_max"] < 0.1
    assert namespace["tree"].posterior["theta"].shape == (4, 1000, 10)
