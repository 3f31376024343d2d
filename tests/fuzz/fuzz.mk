# Fuzzing with libFuzzer (clang-14): the review decoder, the pod policy, the
# selective JSON decoder and the quantity parser, each run for FUZZ_SECONDS by `make fuzz`, which
# `make test` runs.  A longer run: make fuzz FUZZ_SECONDS=3600
TEST_TARGETS += fuzz

FUZZ_CC ?= clang-14
FUZZ_SECONDS ?= 60
FUZZ_DIR := build/fuzz
FUZZ_CFLAGS = -std=c17 -D_POSIX_C_SOURCE=200809L -g -O1 \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-Ilib -Iwebhook -Itests/fuzz $(shell pkg-config --cflags jansson)
FUZZ_CORE := $(wildcard lib/*.c) webhook/config.c webhook/buf.c webhook/text.c webhook/jsonout.c \
	webhook/arena.c webhook/patch.c webhook/pick.c webhook/policy.c \
	webhook/review.c webhook/mutate.c webhook/pod.c webhook/toleration.c
FUZZ_TARGETS := fuzz_review fuzz_policy fuzz_pick fuzz_quantity

$(FUZZ_DIR)/fuzz_review: tests/fuzz/fuzz_review.c tests/fuzz/fuzz_common.c \
		$(FUZZ_CORE) $(wildcard tests/fuzz/*.h webhook/*.h lib/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) -ljansson

$(FUZZ_DIR)/fuzz_policy: tests/fuzz/fuzz_policy.c tests/fuzz/fuzz_common.c \
		$(FUZZ_CORE) $(wildcard tests/fuzz/*.h webhook/*.h lib/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) -ljansson

$(FUZZ_DIR)/fuzz_pick: tests/fuzz/fuzz_pick.c tests/fuzz/fuzz_common.c \
		$(FUZZ_CORE) $(wildcard tests/fuzz/*.h webhook/*.h lib/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) -ljansson

$(FUZZ_DIR)/fuzz_quantity: tests/fuzz/fuzz_quantity.c $(wildcard lib/*.c lib/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^)

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
