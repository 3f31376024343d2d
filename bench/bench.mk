# bench/bench.mk - `make bench`: vgpu-webhook against the Go reference
# webhook, on 127.0.0.1, server and load pinned to one core each.  About
# three minutes (plus ~35 s the first time, to compile the Go standard
# library); not part of `make test`.  See "Benchmark" in README.md.
#
#   make bench [BENCH_DURATION=3] [BENCH_ROUNDS=3] [BENCH_PROFILE=1]

BENCH_OUT := $(BUILD)/bench
GOREF := $(BENCH_OUT)/goref
HANDSHAKE := $(BENCH_OUT)/handshake
CORE := $(BENCH_OUT)/core

.PHONY: bench

bench: $(BIN) $(GOREF) $(HANDSHAKE) $(CORE)
	BUILD=$(BUILD) PYTHON=$(PYTHON) ./bench/run.sh $(BIN) $(GOREF) \
		$(HANDSHAKE) $(CORE)

# Standard library only: GOPATH mode, no module download, a build cache
# under the build folder.
$(GOREF): bench/goref/main.go
	@mkdir -p $(@D)
	GO111MODULE=off GOFLAGS= GOPROXY=off GOCACHE=$(abspath $(BENCH_OUT))/gocache \
		go build -trimpath -o $@ bench/goref/main.go

# It takes the webhook's file reader, and nothing else of it.
$(HANDSHAKE): bench/handshake.c webhook/file.c webhook/file.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -Iwebhook $(LDALL) -o $@ bench/handshake.c \
		webhook/file.c $(shell pkg-config --libs openssl) -lpthread \
		$(LDLIBS)

# The admission core without HTTP or TLS.
$(CORE): bench/core.c $(APPA) $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) $(LDALL) -o $@ $< $(APPA) $(LIBA) $(PKG_LIBS) \
		-lpthread $(LDLIBS)
