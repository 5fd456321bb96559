import os

os.environ.setdefault("MPLBACKEND", "Agg")  # headless: figures render to files only
