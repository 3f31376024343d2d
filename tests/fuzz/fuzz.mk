# Fuzzing with libFuzzer (clang-14): the review decoder, the pod policy, the
# selective JSON decoder, the quantity parser, the YAML reader and the
# scanner of a review's start, each run for FUZZ_SECONDS by `make fuzz`, which
# `make test` runs.  A longer run: make fuzz FUZZ_SECONDS=3600
TEST_TARGETS += fuzz

FUZZ_CC ?= clang-14
FUZZ_SECONDS ?= 60
FUZZ_DIR := build/fuzz
FUZZ_CFLAGS = -std=c17 -D_POSIX_C_SOURCE=200809L -g -O1 \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-Ilib -Iwebhook -Itests/fuzz $(shell pkg-config --cflags jansson yaml-0.1)

# Everything but the server side (HTTP, TLS and its settings, certificates,
# addresses, metrics, the commands and main()), so that a new module of the
# core is fuzzed without a change here.
FUZZ_NOT_CORE := webhook/main.c webhook/cmd_%.c webhook/httpd.c \
	webhook/certs.c webhook/addr.c webhook/metrics.c webhook/tlsconf.c \
	webhook/conns.c
FUZZ_CORE := $(wildcard lib/*.c) \
	$(filter-out $(FUZZ_NOT_CORE),$(wildcard webhook/*.c)) \
	tests/fuzz/fuzz_common.c
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_TARGETS := $(filter-out fuzz_common,$(FUZZ_TARGETS))
FUZZ_OBJ := $(FUZZ_CORE:%.c=$(FUZZ_DIR)/obj/%.o)

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<

# The core is an archive: each target takes from it only what it calls.
$(FUZZ_DIR)/libcore.a: $(FUZZ_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_%.o $(FUZZ_DIR)/libcore.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $^ -ljansson -lyaml

# Kept between builds, although only the pattern above names them.
.SECONDARY: $(FUZZ_TARGETS:%=$(FUZZ_DIR)/obj/tests/fuzz/%.o)

-include $(FUZZ_OBJ:.o=.d) $(FUZZ_TARGETS:%=$(FUZZ_DIR)/obj/tests/fuzz/%.d)

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_TARGETS:%=$(FUZZ_DIR)/%)

# Each target starts from the seeds (made from the fixtures) and its own
# corpus, kept in build/fuzz between runs; a crash fails the target.
fuzz: fuzz-build
	@$(PYTHON) tests/fuzz/seeds.py $(FUZZ_DIR)/seeds
	@set -e; for t in $(FUZZ_TARGETS); do \
		name=$${t#fuzz_}; mkdir -p $(FUZZ_DIR)/corpus/$$name; \
		dict=""; [ -f tests/fuzz/$$name.dict ] && \
			dict="-dict=tests/fuzz/$$name.dict"; \
		echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
		$(FUZZ_DIR)/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
			-rss_limit_mb=2048 -max_len=65536 $$dict \
			-artifact_prefix=$(FUZZ_DIR)/$$t- \
			$(FUZZ_DIR)/corpus/$$name $(FUZZ_DIR)/seeds/$$name \
			>$(FUZZ_DIR)/$$t.log 2>&1 || \
			{ tail -n 40 $(FUZZ_DIR)/$$t.log; exit 1; }; \
		grep -h "^Done" $(FUZZ_DIR)/$$t.log | sed "s/^/fuzz: $$t: /"; \
	done
