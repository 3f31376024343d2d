"""pytest fixtures of the integration tests (run.py).

note(text): a figure a test measured (a latency, a delay), printed as
`note <test>: text` before pytest's summary line, pass or fail.
"""

import pytest

_notes = []


@pytest.fixture
def note(request):
    return lambda text: _notes.append((request.node.nodeid, text))


def pytest_terminal_summary(terminalreporter):
    if _notes:
        terminalreporter.ensure_newline()
    for nodeid, text in _notes:
        terminalreporter.write_line("note %s: %s" % (nodeid, text))
