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
    assert namespace["row"]["mean_err_max"] < 0.1  # full-rank VI on a Gaussian: its family holds the truth
    assert namespace["tree"].posterior["theta"].shape == (4, 1000, 10)  # mu, log tau and the eight schools
    assert namespace["ref"].passes
    assert namespace["cal"].flagged["NUTS"] == []


def test_the_readme_is_a_front_page_that_links_the_docs():
    """At most 150 lines; every docs/ page it links exists and opens by saying what it is for."""
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    links = re.findall(r"\]\((docs/[\w./-]+\.md)\)", text)
    assert {"docs/methods.md", "docs/your-posterior.md", "docs/studies.md", "docs/benchmarks.md",
            "docs/architecture.md"} <= set(links)
    for link in links:
        page = README.parent / link
        assert page.exists(), link
        lines = [line for line in page.read_text().splitlines() if line.strip()]
        assert lines[0].startswith("# ") and "page is for" in lines[1], link
