# tests/e2e/e2e.mk - `make e2e`: the webhook behind a real kube-apiserver
# (1.20.2, built from Debian's own kubernetes source package), with etcd,
# RBAC and static tokens, driven with kubectl; part of `make test`.  See
# "Tested against a real API server" in README.md.
#
# The first run installs what is missing (tests/e2e/install-deps.sh, as
# root, never reading standard input) and builds kube-apiserver once into
# ${XDG_CACHE_HOME:-$HOME/.cache}/vgpu-webhook/ (about 6 minutes on 2 cores;
# 2 GB of memory, 1 GB of disk); later runs, and other clones on the same
# machine, reuse it.  helm and kubectl come from scripts/get-helm.sh.
# tests/e2e/run.py runs under pytest.
#
#   make e2e                       every test
#   make e2e E2E_TESTS="corpus quota"   some tests only (pytest -k, each
#                                  a part of test names)
#   make e2e E2E_CASES=/tmp/cases  another folder of corpus cases
TEST_TARGETS += e2e

E2E_TESTS ?=
E2E_CASES ?=
E2E_EMPTY :=
E2E_K = $(subst $(E2E_EMPTY) $(E2E_EMPTY), or ,$(strip $(E2E_TESTS)))

.PHONY: e2e
e2e: $(BIN)
	@./tests/e2e/install-deps.sh
	@./scripts/get-helm.sh build/tools
	@apiserver=$$(./tests/e2e/get-apiserver.sh) && \
		KUBE_APISERVER="$$apiserver" VGPU_WEBHOOK="$(abspath $(BIN))" \
		KUBECTL=build/tools/kubectl HELM=build/tools/helm \
		$(if $(E2E_CASES),E2E_CASES="$(E2E_CASES)") \
		$(PYTEST) tests/e2e/run.py $(if $(E2E_K),-k "$(E2E_K)")
