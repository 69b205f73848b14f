"""What every notebook builder shares: collect markdown and code cells, then write the notebook."""
from pathlib import Path

import nbformat as nbf

CELLS: list = []


def md(source: str) -> None:
    CELLS.append(nbf.v4.new_markdown_cell(source))


def code(source: str, tags=None) -> None:
    cell = nbf.v4.new_code_cell(source)
    if tags:
        cell.metadata["tags"] = tags
    CELLS.append(cell)


def write(name: str) -> None:
    """Write the collected cells to notebooks/<name> (no outputs: execute it with papermill)."""
    nb = nbf.v4.new_notebook()
    nb.cells = CELLS
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nbf.write(nb, Path(__file__).resolve().parents[1] / name)
