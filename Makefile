# vgpu-webhook - plain Makefile.
#
#   make            build build/vgpu-webhook, build/libvgpu.{a,so}, build/vgpu.pc
#   make run        install what is missing, build, make a development
#                   certificate, serve on localhost
#   make check      the fast tier: build, unit tests, fixtures (well under a
#                   minute; installs nothing)
#   make test       install what is missing, then run every test suite
#                   (make suites: the same without the install step)
#   make install    PREFIX=/usr/local DESTDIR= (binary, library, header, .pc,
#                   man page, bash and zsh completion)
#
# A plain `make` only builds: it never installs packages (make deps does).
#
# Knobs: BUILD (output folder), SANITIZE=1 (ASan+UBSan build, use with
# BUILD=build/asan), MEMCHECK=1 (describe the arena to valgrind's memcheck,
# as make valgrind does), WERROR=0 (drop -Werror), CC, OPT (the project's
# optimisation flags), and the usual CPPFLAGS, CFLAGS and LDFLAGS, which
# come after the project's own flags (make CFLAGS=-O0 builds unoptimised).
# The Python suites run under pytest: PYTEST_FLAGS (default -q; -v lists
# every test), FIXTURES_JOBS=N (cases at a time, pytest-xdist), FIXTURES_K
# (a pytest -k selection of the corpus), and ALLOW_SKIP=1, which lets a
# suite pass with tests that could not run for a missing tool (by default
# each prints SKIP and fails the suite).  MUTANTS_JOBS=N: mutants at a
# time (default 2); VALGRIND_SAMPLE: the corpus cases memcheck runs.

CC ?= cc
BUILD ?= build
PREFIX ?= /usr/local
DESTDIR ?=
WERROR ?= 1
SANITIZE ?= 0
MEMCHECK ?= 0
PYTHON ?= /usr/bin/python3
FIXTURES_JOBS ?= 1
FIXTURES_K ?=
MUTANTS_JOBS ?= 2
PYTEST_FLAGS ?= -q
ALLOW_SKIP ?= 0

VERSION := $(shell sed -n 's/^\#define VGPU_VERSION "\(.*\)"/\1/p' lib/vgpu.h)
# The build's identity (webhook/version.h): the commit, "-dirty" with
# changes, and its date (or SOURCE_DATE_EPOCH), so that two builds of one
# commit are the same.  Both may be given: make VGPU_REVISION=abc.
VGPU_REVISION ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null | \
	sed "s/$$/$$(git diff --quiet HEAD -- 2>/dev/null || echo -dirty)/" | \
	grep . || echo unknown)
VGPU_BUILD_DATE ?= $(shell date -u -d "@$${SOURCE_DATE_EPOCH:-$$(git log -1 \
	--format=%ct 2>/dev/null || date +%s)}" +%Y-%m-%dT%H:%M:%SZ)

WARN := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wvla -Wwrite-strings
ifeq ($(WERROR),1)
WARN += -Werror
endif

ifeq ($(SANITIZE),1)
OPT ?= -O1 -g -fno-omit-frame-pointer
HARDEN := -fsanitize=address,undefined -fno-sanitize-recover=all
LDHARDEN := -fsanitize=address,undefined
FORTIFY :=
else
OPT ?= -O2 -g
HARDEN := -fstack-protector-strong -fstack-clash-protection
LDHARDEN := -pie -Wl,-z,relro,-z,now
# _FORTIFY_SOURCE needs the optimiser: left out when the last -O given is
# -O0 (or there is none), and when the packager's flags set it already.
LAST_O = $(lastword $(filter -O%,$(OPT) $(CFLAGS)))
FORTIFY = $(if $(findstring _FORTIFY_SOURCE,$(CPPFLAGS) $(CFLAGS)),,$(if \
	$(filter-out -O0,$(LAST_O)),-D_FORTIFY_SOURCE=3))
endif

# libmicrohttpd: 0.9.75 with patches/libmicrohttpd/ applied, built as a
# static library in MHD_DIR by scripts/build-mhd.sh (README "HTTP
# framing" says why); MHD=system links the distribution's shared
# libmicrohttpd instead, without the patches.
MHD ?= patched
MHD_DIR ?= build/mhd
ifeq ($(MHD),system)
MHD_PKG := libmicrohttpd
MHD_LIB :=
MHD_INC :=
else
MHD_PKG :=
MHD_LIB := $(MHD_DIR)/lib/libmicrohttpd.a
MHD_INC := -I$(MHD_DIR)/include
endif

# Recursive (=) so that pkg-config runs only once the packages are there.
PKGS = $(MHD_PKG) gnutls jansson libcurl yaml-0.1
PKG_CFLAGS = $(MHD_INC) $(shell pkg-config --cflags $(PKGS))
# libcurl is not linked: webhook/curlload.c loads it when a command needs it.
PKG_LIBS = $(MHD_LIB) $(shell pkg-config --libs $(filter-out libcurl,$(PKGS)))
CMOCKA_LIBS = $(shell pkg-config --libs cmocka)

# The project's flags, then the user's: a later flag wins.  -MMD -MP write
# each object's header dependencies next to it (included at the end).
VGPU_CPPFLAGS = -D_POSIX_C_SOURCE=200809L $(FORTIFY) \
	$(if $(filter 1,$(MEMCHECK)),-DARENA_MEMCHECK)
VGPU_CFLAGS = -std=c17 $(WARN) $(OPT) $(HARDEN) -fPIC
DEPFLAGS = -MMD -MP
BASE_CFLAGS = $(VGPU_CPPFLAGS) $(CPPFLAGS) $(VGPU_CFLAGS) $(CFLAGS)
LIB_CFLAGS = -Ilib $(BASE_CFLAGS)
APP_CFLAGS = -Ilib -Iwebhook $(PKG_CFLAGS) $(BASE_CFLAGS)
# Links with the flags of the objects (for LTO and the sanitizers), then
# the hardening and the user's LDFLAGS.
LDALL = $(LDHARDEN) $(LDFLAGS)
LINK = $(CC) $(VGPU_CFLAGS) $(CFLAGS) $(LDALL)

LIB_SRC := $(wildcard lib/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
APP_SRC := $(filter-out webhook/main.c,$(wildcard webhook/*.c))
APP_OBJ := $(APP_SRC:%.c=$(BUILD)/%.o)
MAIN_OBJ := $(BUILD)/webhook/main.o
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

BIN := $(BUILD)/vgpu-webhook
LIBA := $(BUILD)/libvgpu.a
LIBSO := $(BUILD)/libvgpu.so
APPA := $(BUILD)/libwebhook.a
PC := $(BUILD)/vgpu.pc

.PHONY: all deps build run test suites check unit fixtures fixtures-corpus \
	asan valgrind arena-canary mutants install clean
.DEFAULT_GOAL := all

all: build

deps:
	@./scripts/install-deps.sh

build: $(BIN) $(LIBA) $(LIBSO) $(PC)

$(BUILD)/lib/%.o: lib/%.c $(BUILD)/lib/%.d
	@mkdir -p $(@D)
	$(CC) $(LIB_CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(BUILD)/webhook/%.o: webhook/%.c $(BUILD)/webhook/%.d | $(MHD_LIB)
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) $(DEPFLAGS) -c -o $@ $<

# Only version.o sees the identity; it is rebuilt when the identity
# changes (the stamp is rewritten only then).
VERSION_ID := $(VGPU_REVISION) $(VGPU_BUILD_DATE)
$(BUILD)/version.stamp: FORCE
	@mkdir -p $(@D)
	@[ "$$(cat $@ 2>/dev/null)" = "$(VERSION_ID)" ] || echo "$(VERSION_ID)" >$@
$(BUILD)/webhook/version.o: $(BUILD)/version.stamp
$(BUILD)/webhook/version.o: VGPU_CPPFLAGS += \
	-DVGPU_REVISION='"$(VGPU_REVISION)"' -DVGPU_BUILD_DATE='"$(VGPU_BUILD_DATE)"'
.PHONY: FORCE
FORCE:

$(LIBA): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(LIBSO): $(LIB_OBJ)
	$(LINK:-pie=) -shared -Wl,-soname,libvgpu.so.0 -o $@ $^ $(LDLIBS)

$(APPA): $(APP_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BIN): $(MAIN_OBJ) $(APPA) $(LIBA) $(MHD_LIB)
	$(LINK) -o $@ $(MAIN_OBJ) $(APPA) $(LIBA) $(PKG_LIBS) -lpthread $(LDLIBS)

ifneq ($(MHD_LIB),)
$(MHD_LIB): scripts/build-mhd.sh $(wildcard patches/libmicrohttpd/*.patch)
	@./scripts/build-mhd.sh $(MHD_DIR)
endif

$(PC): lib/vgpu.pc.in lib/vgpu.h
	@mkdir -p $(@D)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< >$@

# --- tests ---------------------------------------------------------------

TEST_CFLAGS = $(APP_CFLAGS) -Itests/unit -Wno-missing-prototypes \
	-Wno-format-nonliteral $(DEPFLAGS) $(LDALL)

$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/tests/test_%.d $(APPA) $(LIBA) \
		$(MHD_LIB)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) $(TEST_LDFLAGS) -o $@ $< $(APPA) $(LIBA) \
		$(CMOCKA_LIBS) $(PKG_LIBS) -lpthread $(LDLIBS)

# test_review fails allocations on purpose: it wraps the allocator.
$(BUILD)/tests/test_review: TEST_LDFLAGS = \
	-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup
# test_certgen fails one malloc of certgen_bundle.
$(BUILD)/tests/test_certgen: TEST_LDFLAGS = -Wl,--wrap=malloc

# Runs every cmocka program; each prints its summary lines.
unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do $(TEST_WRAPPER) $$t; done

PYTEST = $(PYTHON) -m pytest $(PYTEST_FLAGS) \
	$(if $(filter 1,$(ALLOW_SKIP)),,--fail-on-skip)

# The recorded AdmissionReview corpus, judged by independent JSON Patch
# implementations (python3-jsonpatch, and evanphx/json-patch in Go): first
# the corpus itself (--lint), then the binary on each case; then `default`
# on manifests (tests/manifests), judged by go-yaml v2, on KRM
# ResourceLists, and `vgpu-webhook test` on examples/policy-tests/.
fixtures: fixtures-corpus
	@VGPU_WEBHOOK="$(TEST_WRAPPER) $(BIN)" $(PYTEST) \
		tests/manifests/test_manifests.py tests/manifests/test_krm.py \
		tests/manifests/test_policy_tests.py

# The corpus alone (FIXTURES_K: some cases only, a pytest -k selection).
fixtures-corpus: $(BIN)
	@$(PYTEST) tests/fixtures/run.py --lint >$(BUILD)/fixtures-lint.log || \
		{ cat $(BUILD)/fixtures-lint.log; exit 1; }
	@echo "fixtures lint: $$(tail -n 1 $(BUILD)/fixtures-lint.log)"
	@VGPU_WEBHOOK="$(TEST_WRAPPER) $(BIN)" $(PYTEST) tests/fixtures/run.py \
		$(if $(filter-out 0 1,$(FIXTURES_JOBS)),-n $(FIXTURES_JOBS)) \
		$(if $(FIXTURES_K),-k "$(FIXTURES_K)")

# memcheck must see into the arena: the canary reads a freed value and a
# value taken back by arena_end(), and both reads must be reported.
CANARY := $(BUILD)/tests/arena_canary
$(CANARY): tests/unit/arena_canary.c $(CANARY).d $(APPA) $(LIBA) $(MHD_LIB)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(APPA) $(LIBA) $(PKG_LIBS) -lpthread \
		$(LDLIBS)

# Only a MEMCHECK build describes the arena to memcheck: elsewhere the
# target builds one in build/vg, as make valgrind does.
ifeq ($(MEMCHECK),1)
arena-canary: $(CANARY)
	@valgrind --error-exitcode=99 $(CANARY) >$(CANARY).log 2>&1; rc=$$?; \
	n=$$(grep -c "Invalid read of size" $(CANARY).log); \
	if [ $$rc -ne 99 ] || [ $$n -ne 2 ]; then cat $(CANARY).log; \
		echo "arena canary: memcheck reported $$n of the 2 reads into" \
			"the arena (exit $$rc)"; exit 1; fi; \
	echo "arena canary: memcheck reported the 2 reads into the arena"
else
arena-canary:
	@$(MAKE) --no-print-directory BUILD=build/vg OPT='-O1 -g' MEMCHECK=1 \
		arena-canary
endif

# Every suite under ASan and UBSan, in its own build folder.
asan:
	@$(MAKE) --no-print-directory BUILD=build/asan SANITIZE=1 unit fixtures

# What only memcheck sees, with the arena on (as in production): the
# arena canary, the unit tests, and a sample of the fixture corpus (the
# cases whose number ends in 0 or 5, about a fifth; ASan runs it whole, and
# the arena is described to memcheck the same way for every case).
VALGRIND = valgrind -q --error-exitcode=99 --leak-check=full \
	--show-leak-kinds=definite,indirect,possible \
	--errors-for-leak-kinds=definite,indirect,possible
VALGRIND_SAMPLE ?= 0- or 5-
valgrind:
	@$(MAKE) --no-print-directory BUILD=build/vg OPT='-O1 -g' MEMCHECK=1 \
		TEST_WRAPPER='$(VALGRIND)' FIXTURES_JOBS=2 \
		FIXTURES_K='$(VALGRIND_SAMPLE)' arena-canary unit \
		fixtures-corpus

# Source mutations the fast tier must kill (tests/mutants.sh): each in a
# copy of the tree under build/mutants.
mutants: build $(UNIT_BIN)
	@MUTANTS_JOBS=$(MUTANTS_JOBS) ./tests/mutants.sh

# Parts that live with their own folders add targets to TEST_TARGETS.
TEST_TARGETS := unit fixtures mutants
-include $(wildcard */*.mk tests/*/*.mk)

# Each target of list in turn, timed; stops at the first that fails.
RUN_TIMED = set -e; all=$$(date +%s); for t in $(1); do \
		echo "=== make $$t"; s=$$(date +%s); \
		$(MAKE) --no-print-directory $$t; \
		echo "=== make $$t: $$(($$(date +%s) - s)) s"; done; \
	echo "=== $(2) passed in $$(($$(date +%s) - all)) s"

# The fast tier: what a change must keep green at every commit.
check: build
	@$(call RUN_TIMED,unit fixtures,the fast tier)

test: deps
	@$(MAKE) --no-print-directory suites

# Every suite, without the install step.
suites: build
	@$(call RUN_TIMED,$(TEST_TARGETS) asan valgrind,all test suites)

run: deps
	@$(MAKE) --no-print-directory build
	@./scripts/run.sh $(BIN)

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib \
		$(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/vgpu-webhook
	install -m 644 $(LIBA) $(DESTDIR)$(PREFIX)/lib/libvgpu.a
	install -m 755 $(LIBSO) $(DESTDIR)$(PREFIX)/lib/libvgpu.so.$(VERSION)
	ln -sf libvgpu.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libvgpu.so.0
	ln -sf libvgpu.so.0 $(DESTDIR)$(PREFIX)/lib/libvgpu.so
	install -m 644 lib/vgpu.h $(DESTDIR)$(PREFIX)/include/vgpu.h
	install -m 644 $(PC) $(DESTDIR)$(PREFIX)/lib/pkgconfig/vgpu.pc
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/zsh/vendor-completions
	install -m 644 docs/vgpu-webhook.1 $(DESTDIR)$(PREFIX)/share/man/man1/vgpu-webhook.1
	$(BIN) completion bash >$(BUILD)/vgpu-webhook.bash
	$(BIN) completion zsh >$(BUILD)/_vgpu-webhook
	install -m 644 $(BUILD)/vgpu-webhook.bash \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/vgpu-webhook
	install -m 644 $(BUILD)/_vgpu-webhook \
		$(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_vgpu-webhook

clean:
	rm -rf build

# The header dependencies that -MMD wrote.  An output whose .d file is
# missing (an old build folder) is built again, which writes it.
-include $(LIB_OBJ:.o=.d) $(APP_OBJ:.o=.d) $(MAIN_OBJ:.o=.d) $(UNIT_BIN:=.d) \
	$(CANARY).d
$(BUILD)/%.d: ;
.PRECIOUS: $(BUILD)/%.d
