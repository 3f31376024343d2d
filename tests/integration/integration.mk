# tests/integration/integration.mk - `make integration`: the real server
# on 127.0.0.1, driven over TLS as the API server drives it, by
# tests/integration/run.py under pytest (with python3-jsonpatch;
# certificates from certs/gen-certs.sh).  About 40 s; part of `make test`.
#
#   make integration                              the release build
#   make integration BUILD=build/asan SANITIZE=1  under ASan and UBSan
#   make integration INTEGRATION_TESTS="rotation sigterm"   some tests only
#                                     (pytest -k, each a part of test names)
TEST_TARGETS += integration

INTEGRATION_TESTS ?=
INTEGRATION_EMPTY :=
INTEGRATION_K = $(subst $(INTEGRATION_EMPTY) $(INTEGRATION_EMPTY), or ,$(strip \
	$(INTEGRATION_TESTS)))

.PHONY: integration
integration: $(BIN)
	@VGPU_WEBHOOK="$(TEST_WRAPPER) $(abspath $(BIN))" \
		$(PYTEST) tests/integration/run.py tests/integration/test_check.py \
		tests/integration/test_reload.py tests/integration/test_edges.py \
		$(if $(INTEGRATION_K),-k "$(INTEGRATION_K)")
