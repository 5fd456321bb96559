"""Check that report pages fit the screen, in a real browser (Debian's headless ``chromium``).

    python scripts/check_pages.py [reports] [--widths 1280 800]

For every ``index.html`` under the folder (the index, each study's page, ``workbench compare``
pages), at each window width: the page must not scroll sideways, every figure must lie within
the window, every table must either fit or sit in its own horizontally scrolling box
that does, and a column the page's text names (its health column, say) must show without
scrolling that box. The page is loaded with a small script appended (in a temporary copy, beside the
original so its images load) that measures the laid-out page; Chromium's ``--dump-dom`` prints
the result. Exit status 1 when a page fails, with what and where.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

MEASURE = """
<script>
window.addEventListener('load', () => {
  const width = window.innerWidth, bad = [];
  const doc = document.documentElement.scrollWidth;
  if (doc > width) bad.push(`the page scrolls sideways: ${doc} px wide in a ${width} px window`);
  const describe = (el) => (el.getAttribute('src') || el.textContent || '').trim().slice(0, 60);
  document.querySelectorAll('img').forEach((img) => {
    const r = img.getBoundingClientRect();
    if (r.right > width + 1 || r.left < -1)
      bad.push(`figure ${describe(img)} runs off the window (${Math.round(r.left)}-${Math.round(r.right)} px)`);
    if (!img.complete || img.naturalWidth === 0) bad.push(`figure ${describe(img)} did not load`);
  });
  document.querySelectorAll('table').forEach((table) => {
    const box = table.closest('.scroll');
    const r = (box || table).getBoundingClientRect();
    if (r.right > width + 1)
      bad.push(`table "${describe(table.querySelector('th') || table)}" runs off the window ` +
               `(right edge ${Math.round(r.right)} px)`);
    if (!box && table.getBoundingClientRect().width > table.parentElement.getBoundingClientRect().width + 1)
      bad.push(`table "${describe(table.querySelector('th') || table)}" is wider than its column and has no scroll box`);
  });
  // a column the page's text names must show without scrolling its table's box sideways
  const prose = Array.from(document.querySelectorAll('p, li')).filter((el) => !el.closest('table'))
    .map((el) => el.textContent.toLowerCase()).join(' ');
  // named as a whole word: "seed" is not named by "seeds"
  const wordChar = (c) => /[a-z0-9_]/.test(c || ' ');
  const named = (text, name) => {
    for (let i = text.indexOf(name); i >= 0; i = text.indexOf(name, i + 1))
      if (!wordChar(text[i - 1]) && !wordChar(text[i + name.length])) return true;
    return false;
  };
  document.querySelectorAll('.scroll').forEach((box) => {
    const edge = box.getBoundingClientRect().right;
    box.querySelectorAll('th').forEach((th) => {
      const name = th.textContent.trim().toLowerCase();
      if (name.length >= 4 && th.getBoundingClientRect().right > edge + 1 && named(prose, name))
        bad.push(`column "${name}", which the text refers to, is hidden until its table is scrolled sideways`);
    });
  });
  const out = document.createElement('pre');
  out.id = 'page-fit-check';
  out.textContent = JSON.stringify(bad);
  document.body.appendChild(out);
});
</script>
"""
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    raise SystemExit("no headless Chromium found: on Debian, `apt install chromium`")


def check_page(page: Path, width: int, chrome: str) -> list[str]:
    """What does not fit on ``page`` at a window ``width`` px wide (an empty list: it fits)."""
    probe = page.with_name(f".fit-check-{page.name}")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    try:
        dom = subprocess.run(
            [chrome, "--headless", "--no-sandbox", "--disable-gpu", f"--window-size={width},1000",
             "--virtual-time-budget=10000", "--dump-dom", probe.resolve().as_uri()],
            capture_output=True, text=True, timeout=120,
        ).stdout
    finally:
        probe.unlink(missing_ok=True)
    found = re.search(r'<pre id="page-fit-check">(.*?)</pre>', dom, re.S)
    if found is None:
        return ["the page did not finish loading in the browser"]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default="reports")
    parser.add_argument("--widths", type=int, nargs="+", default=[1280, 800])
    args = parser.parse_args(argv)
    pages = sorted(Path(args.folder).rglob("index.html"))
    if not pages:
        print(f"no index.html under {args.folder}: run `make report` first")
        return 1
    chrome, failed = browser(), 0
    for page in pages:
        for width in args.widths:
            problems = check_page(page, width, chrome)
            failed += bool(problems)
            status = "ok" if not problems else "FAILS"
            print(f"{status:5} {width:5} px  {page}")
            for p in problems:
                print(f"              {p}")
    print(f"{len(pages)} pages x {len(args.widths)} widths: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
