"""tests/support/file_order.py: under `make test` the longest kinds of test file are handed out first."""

from __future__ import annotations

import pytest

from tests.support.file_order import LONGEST_FIRST, rank

pytest_plugins = ["pytester"]

MARKERS = "[pytest]\nmarkers =\n    browser: b\n    kernel: k\n    process: p\n    node: n\n"


def test_files_go_out_longest_kind_first_each_keeping_its_tests_order(pytester: pytest.Pytester) -> None:
    pytester.makeini(MARKERS)
    pytester.makepyfile(
        test_a_plain="def test_one(): pass\ndef test_two(): pass\n",
        test_b_kernel="import pytest\n\n@pytest.mark.kernel\ndef test_k(): pass\ndef test_plain_beside_it(): pass\n",
        test_c_browser="import pytest\npytestmark = pytest.mark.browser\ndef test_b(): pass\n",
        test_d_process="import pytest\n\n@pytest.mark.process\ndef test_p(): pass\n",
    )
    pytester.mkpydir("bench").joinpath("test_rows.py").write_text("def test_rows(): pass\n")
    result = pytester.runpytest_inprocess(
        "-p", "tests.support.file_order", "--collect-only", "-q", "-p", "no:cacheprovider"
    )
    ids = [line for line in result.outlines if "::" in line]
    assert ids == [
        "bench/test_rows.py::test_rows",
        "test_c_browser.py::test_b",
        "test_b_kernel.py::test_k",
        "test_b_kernel.py::test_plain_beside_it",
        "test_d_process.py::test_p",
        "test_a_plain.py::test_one",
        "test_a_plain.py::test_two",
    ]


def test_this_run_hands_out_its_files_in_that_order(request: pytest.FixtureRequest) -> None:
    """The suite registers the plugin (tests/conftest.py): the files of this very run come longest kind first."""
    assert request.config.pluginmanager.has_plugin("tests.support.file_order")
    of_file: dict[object, int] = {}
    for item in request.session.items:
        of_file[item.path] = min(of_file.get(item.path, len(LONGEST_FIRST)), rank(item))
    ranks = [of_file[item.path] for item in request.session.items]
    assert ranks == sorted(ranks)
