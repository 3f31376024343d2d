# tests/cli/cli.mk - `make cli`: the command line as a user meets it
# (tests/cli/test_cli.py): each command's help, the suggestions for a
# misspelt command or flag, the bash and zsh completion scripts run in
# those shells, and the man page (docs/vgpu-webhook.1) checked against
# the binary's flags and under groff -man -ww.  A few seconds; part of
# `make test`.
TEST_TARGETS += cli

.PHONY: cli
cli: $(BIN)
	@VGPU_WEBHOOK="$(TEST_WRAPPER) $(abspath $(BIN))" $(PYTEST) tests/cli/test_cli.py
