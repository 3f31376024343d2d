# `make krm`, run by `make test`: the binary as an exec KRM function under
# the real kustomize 5.6.0 (tests/manifests/test_krm_tools.py).  kustomize
# comes from Debian trixie's package into build/tools/ (git-ignored) the
# first time: scripts/get-kustomize.sh.  The protocol itself, on
# ResourceLists recorded from kustomize and kpt, is tested by `make
# fixtures` (tests/manifests/test_krm.py).
TEST_TARGETS += krm

KRM_TOOLS := build/tools

.PHONY: krm krm-tools
krm-tools:
	@./scripts/get-kustomize.sh $(KRM_TOOLS)

krm: build krm-tools
	@KUSTOMIZE=$(KRM_TOOLS)/kustomize VGPU_WEBHOOK=$(BIN) $(PYTEST) \
		tests/manifests/test_krm_tools.py
