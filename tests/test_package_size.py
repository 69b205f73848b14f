"""fedrl_kit stays readable: docstrings at most 15 % of its lines, no module docstring over 60 lines, and each paper
package opening with its equation → function table in at most 40 (benchmarks/package_size.py counts them with ast)."""

import ast

import pytest

from conftest import import_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from import_benchmark("package_size")


@pytest.fixture(scope="module")
def sizes(bench):
    return bench.package_sizes()


def test_docstrings_are_at_most_15_percent_of_the_package(sizes):
    assert sizes["docstring_lines"] <= 0.15 * sizes["lines"], sizes["docstring_percent"]


def test_no_module_docstring_is_over_60_lines(sizes):
    long = {n: m["module_docstring_lines"] for n, m in sizes["per_module"].items() if m["module_docstring_lines"] > 60}
    assert not long


@pytest.mark.parametrize("package", ["fedgrpo", "pubswap", "fedmoa"])
def test_a_paper_package_opens_with_its_equation_table_in_at_most_40_lines(bench, sizes, package):
    assert sizes["per_module"][f"fedrl_kit.{package}"]["module_docstring_lines"] <= 40
    doc = ast.get_docstring(ast.parse((bench.PACKAGE / package / "__init__.py").read_text()))
    assert "paper" in doc and "code" in doc and "Deviations" in doc


def test_the_counter_counts_module_class_and_function_docstrings_only(bench):
    src = ('"""Mod.\n\nTwo."""\nX = 1\n"""an attribute doc: not counted"""\n\n\nclass A:\n    """A."""\n\n'
           '    def f(self):\n        """F.\n\n        Args:\n            x: y.\n        """\n')
    assert sorted(bench.docstring_spans(ast.parse(src))) == [("class", 1), ("function", 5), ("module", 3)]
