"""pytest fixtures of the end-to-end suite (run.py).

report(text): a line printed before pytest's summary line, pass or fail:
the cluster's addresses, each test's line with its number of assertions,
its SKIP lines (what 1.20 cannot check, and why: expected, so the test
still passes), and the number of assertions of the run.

Each test can also be chosen with -k by the name it prints (its e2e_name:
dry-run, extended-resource-toleration, ...), as well as by its own.
"""

import pytest

_lines = []


@pytest.fixture(scope="session")
def report():
    return _lines.append


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    # Before -k deselects.
    for item in items:
        name = getattr(getattr(item, "function", None), "e2e_name", None)
        if name:
            item.extra_keyword_matches.add(name)


def pytest_terminal_summary(terminalreporter):
    if _lines:
        terminalreporter.ensure_newline()
    for line in _lines:
        terminalreporter.write_line(line)
