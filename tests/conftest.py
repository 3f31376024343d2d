"""What the Python suites share under pytest.

A test that cannot run here (a tool is missing: go, helm, node, the
binary) calls pytest.skip() with the reason.  Each skip is printed on a
line of its own, `SKIP <test>: <reason>`, before pytest's summary line;
with --fail-on-skip (which the Makefile passes unless ALLOW_SKIP=1) a
skipped test fails the run, so that `make test` never passes on tests that
did not run.
"""

import pytest

_skips = []


def pytest_addoption(parser):
    parser.addoption("--fail-on-skip", action="store_true",
                     help="exit 1 when a test was skipped (a missing tool)")


def pytest_runtest_logreport(report):
    if not report.skipped:
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) \
        else str(report.longrepr)
    if reason.startswith("Skipped: "):
        reason = reason[len("Skipped: "):]
    _skips.append((report.nodeid, reason))


def pytest_sessionfinish(session, exitstatus):
    if _skips and session.config.getoption("fail_on_skip") and \
            exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _skips:
        return
    terminalreporter.ensure_newline()
    for nodeid, reason in _skips:
        terminalreporter.write_line("SKIP %s: %s" % (nodeid, reason))
    if config.getoption("fail_on_skip"):
        terminalreporter.write_line(
            "%d test(s) could not run: that fails the suite "
            "(make ... ALLOW_SKIP=1 lets it pass)" % len(_skips))
