# errgate — hand-written Makefile.
#
#   make            build build/errgate and build/flaky-handler
#   make deps       install missing Debian packages (as root), or print the command
#   make test       C unit tests, busted specs, end-to-end tests; ends "N passed, N failed"
#   make test SAN=1 the same with ASan + UBSan
#   make demo       the whole story on the embedded broker
#   make bench      benchmarks (see bench/README.md)

DEB_PKGS := librdkafka-dev libluajit-5.1-dev luajit libevent-dev libmsgpack-dev \
            lua-busted lua-cjson kcat python3 python3-confluent-kafka curl valgrind prometheus wrk time pkg-config gcc make \
            libcurl4-openssl-dev openssl
PC_PKGS  := luajit rdkafka libevent msgpack libcurl

CC      ?= cc
BUILD   ?= build
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
           -fno-strict-aliasing -MMD -MP
ifeq ($(SAN),1)
BUILD   := build-san
CFLAGS  += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif

# pkg-config is only consulted when a target that compiles is built, so that
# `make deps` works on a machine where the packages are still missing.
PC_CFLAGS = $(shell pkg-config --cflags $(PC_PKGS) 2>/dev/null)
PC_LIBS   = $(shell pkg-config --libs $(PC_PKGS) 2>/dev/null) -lm

SRCS := $(wildcard src/*.c)
OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(SRCS))
LIB_OBJS := $(filter-out $(BUILD)/obj/main.o,$(OBJS))
CTESTS := $(patsubst spec/c/%.c,$(BUILD)/%,$(wildcard spec/c/test_*.c))

.PHONY: all deps check-deps test demo bench clean

all: check-deps $(BUILD)/errgate $(BUILD)/flaky-handler

# ---- dependencies ---------------------------------------------------------
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then echo "deps: all Debian packages present"; exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  echo "deps: installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else \
	  echo "deps: missing Debian packages:$$missing"; \
	  echo "deps: run: sudo apt-get install -y$$missing"; exit 1; \
	fi

check-deps:
	@pkg-config --exists $(PC_PKGS) 2>/dev/null || $(MAKE) --no-print-directory deps

# ---- build ----------------------------------------------------------------
$(BUILD)/obj/%.o: src/%.c | $(BUILD)/obj
	$(CC) $(CFLAGS) $(PC_CFLAGS) -c $< -o $@

$(BUILD)/errgate: $(OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(PC_LIBS)

$(BUILD)/flaky-handler: examples/flaky-handler/flaky_handler.c | $(BUILD)/obj
	$(CC) $(CFLAGS) $(PC_CFLAGS) -o $@ $< $(LDFLAGS) $(PC_LIBS)

$(BUILD)/test_%: spec/c/test_%.c $(LIB_OBJS) | $(BUILD)/obj
	$(CC) $(CFLAGS) $(PC_CFLAGS) -Isrc -o $@ $< $(LIB_OBJS) $(LDFLAGS) $(PC_LIBS)

$(BUILD)/obj:
	mkdir -p $@

# ---- use --------------------------------------------------------------------
test: deps all $(CTESTS)
	@BUILD=$(BUILD) SAN=$(SAN) bash spec/run.sh

demo: deps all
	@BUILD=$(BUILD) bash examples/demo.sh

bench: all
	@BUILD=$(BUILD) bash bench/run.sh

clean:
	rm -rf build build-san

-include $(OBJS:.o=.d)
