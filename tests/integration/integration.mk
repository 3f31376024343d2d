# tests/integration/integration.mk - `make integration`: the real server
# on 127.0.0.1, driven over TLS as the API server drives it, by
# tests/integration/run.py (Python 3 standard library and python3-jsonpatch;
# certificates from certs/gen-certs.sh).  About 30 s; part of `make test`.
#
#   make integration                              the release build
#   make integration BUILD=build/asan SANITIZE=1  under ASan and UBSan
#   make integration INTEGRATION_TESTS="rotation sigterm"   some tests only
TEST_TARGETS += integration

INTEGRATION_TESTS ?=

.PHONY: integration
integration: $(BIN)
	VGPU_WEBHOOK="$(TEST_WRAPPER) $(abspath $(BIN))" \
		$(PYTHON) tests/integration/run.py $(INTEGRATION_TESTS)
