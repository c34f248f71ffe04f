# errgate — hand-written Makefile.
#
#   make            build build/errgate and build/flaky-handler
#   make deps       install missing Debian packages (as root), or print the command;
#                   make test-deps also those only the tests need (Java 17, Maven)
#   make test       C unit tests, busted specs, end-to-end tests; ends "N passed, N failed"
#   make test SAN=1 the same with ASan + UBSan
#   make test VALGRIND=1  every end-to-end suite's errgate processes under
#                   valgrind's memcheck (by default only the suites marked
#                   for it; VALGRIND=0 none: spec/run.sh)
#   make demo       the whole story on the embedded broker
#   make bench      benchmarks (see bench/README.md)
#   make anchors    build the anchors' Java test tools (spec/anchors/README.md)
#   make config-doc the man page's config key reference, rendered from src/lib/config.c
#   make lint       C house style (clang-format, .clang-format), Lua (luacheck,
#                   .luacheckrc), man page (mandoc -T lint) and service unit
#                   (systemd-analyze verify); make format rewrites C to the style
#   make install    PREFIX=/usr/local DESTDIR= : binary, Lua runtime, policies,
#                   examples, man page, systemd unit; make uninstall removes them

DEB_PKGS := librdkafka-dev libluajit-5.1-dev luajit libevent-dev libmsgpack-dev \
            lua-busted lua-cjson kcat python3 python3-confluent-kafka python3-yaml curl valgrind prometheus wrk time pkg-config gcc make \
            mandoc libcurl4-openssl-dev libssl-dev openssl lua-check clang-format libjemalloc-dev
# what `make test` needs besides: the real-cluster suites run Apache Kafka's
# broker (Java 17), fetched from Maven Central by spec/kafka/cluster.sh
TEST_DEB_PKGS := openjdk-17-jdk-headless maven
PC_PKGS  := luajit rdkafka libevent msgpack libcurl libcrypto

# the broker the end-to-end suites run on: both (every suite on the embedded
# broker, the suites marked for it on a real Apache Kafka cluster too),
# embedded, or kafka (spec/run.sh, spec/kafka/cluster.sh)
BROKER  ?= both

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

# build/errgate's allocator. jemalloc (as Redis links it): on the dead-letter
# path glibc's malloc under librdkafka (a malloc per lane header, freed at the
# delivery report) and LuaJIT was the largest cost; jemalloc cut the CPU per
# dead letter by about a third (bench/README.md). Only the product binary
# links it; test binaries and fuzz targets keep glibc's, the sanitizer build
# keeps ASan's, and MALLOC=libc builds without it (after `rm build/errgate`:
# the link does not track the setting). `errgate --version` names it.
MALLOC  ?= jemalloc
ifeq ($(SAN),1)
MALLOC  := libc
endif

# pkg-config is only consulted when a target that compiles is built, so that
# `make deps` works on a machine where the packages are still missing.
PC_CFLAGS = $(shell pkg-config --cflags $(PC_PKGS) 2>/dev/null)
PC_LIBS   = $(shell pkg-config --libs $(PC_PKGS) 2>/dev/null) -lm
MALLOC_LIBS = $(if $(filter jemalloc,$(MALLOC)),-Xlinker --no-as-needed $(shell pkg-config --libs jemalloc 2>/dev/null))

# src/ holds three programs in one binary and their shared library, one
# folder each: lib/ (shared), gateway/ (`errgate run`), commands/ (the
# operator commands), broker/ (`errgate broker`), and main.c. Every file is
# compiled with -Isrc/lib only: a file finds the headers of its own folder
# and of lib/, so an include across the programs does not compile. Tests
# see every folder.
SRCS := $(wildcard src/*.c src/*/*.c)
OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(SRCS))
LIB_OBJS := $(filter-out $(BUILD)/obj/main.o,$(OBJS))
SRC_INC  := -Isrc/lib
TEST_INC := -Isrc/lib -Isrc/gateway -Isrc/commands -Isrc/broker
CTESTS := $(patsubst spec/c/%.c,$(BUILD)/%,$(wildcard spec/c/test_*.c))
# test-only tools (spec/tools/NAME_x.c -> $(BUILD)/NAME-x): built for the
# e2e tests, never installed
TEST_TOOLS := $(patsubst spec/tools/%.c,$(BUILD)/%,$(subst _,-,$(wildcard spec/tools/*.c)))

.PHONY: all deps test-deps check-deps test demo bench chaos chaos-txn chaos-fence soak clean lint format install uninstall config-doc anchors

all: $(BUILD)/errgate $(BUILD)/flaky-handler

# ---- dependencies ---------------------------------------------------------
deps:
	@missing=""; for p in $(DEB_PKGS) $(if $(filter test test-deps,$(MAKECMDGOALS)),$(TEST_DEB_PKGS)); do \
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

# make deps with what make test needs besides (TEST_DEB_PKGS)
test-deps: deps

# the anchors' test tools (spec/anchors/README.md): Java programs the
# real-cluster suites run, built once with Maven into a cache outside the
# tree (~/.cache/errgate/anchors); a suite builds one itself when missing
anchors:
	spec/anchors/spring/anchor.sh build
	spec/anchors/streams-connect/anchor.sh build

# Every compile has check-deps as an order-only prerequisite, so `make -j` on
# a fresh machine compiles nothing before the packages are in. When the goals
# name `deps` (test, demo, chaos and soak do), check-deps waits for it
# instead of starting a second apt-get next to it.
check-deps: $(if $(filter deps test demo chaos chaos-txn chaos-fence soak,$(MAKECMDGOALS)),deps)
	@pkg-config --exists $(PC_PKGS) jemalloc 2>/dev/null || $(MAKE) --no-print-directory deps

# ---- build ----------------------------------------------------------------
$(BUILD)/obj/%.o: src/%.c | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PC_CFLAGS) $(SRC_INC) -c $< -o $@

# The secret words of redaction live in lua/errgate/redact_words.lua, shared
# with the Lua runtime; redact.c includes them rendered as a C header.
$(BUILD)/gen/redact_words.h: lua/errgate/redact_words.lua | check-deps
	@mkdir -p $(dir $@)
	luajit $< --c-header >$@.tmp && mv $@.tmp $@

$(BUILD)/obj/lib/redact.o: $(BUILD)/gen/redact_words.h
$(BUILD)/obj/lib/redact.o: CFLAGS += -I$(BUILD)/gen

$(BUILD)/errgate: $(OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(PC_LIBS) $(MALLOC_LIBS)

$(BUILD)/flaky-handler: examples/flaky-handler/flaky_handler.c | $(BUILD)/obj check-deps
	$(CC) $(CFLAGS) $(PC_CFLAGS) -o $@ $< $(LDFLAGS) $(PC_LIBS)

$(BUILD)/test_%: spec/c/test_%.c $(LIB_OBJS) | $(BUILD)/obj check-deps
	$(CC) $(CFLAGS) $(PC_CFLAGS) $(TEST_INC) -o $@ $< $(LIB_OBJS) $(LDFLAGS) $(PC_LIBS)

$(BUILD)/spill-write-test: spec/tools/spill_write_test.c $(LIB_OBJS) | $(BUILD)/obj check-deps
	$(CC) $(CFLAGS) $(PC_CFLAGS) $(TEST_INC) -o $@ $< $(LIB_OBJS) $(LDFLAGS) $(PC_LIBS)

$(BUILD)/obj:
	mkdir -p $@

# ---- use --------------------------------------------------------------------
test: deps all $(CTESTS) $(TEST_TOOLS) lint
	@BUILD=$(BUILD) SAN=$(SAN) BROKER=$(BROKER) VALGRIND=$(VALGRIND) bash spec/run.sh

demo: deps all
	@BUILD=$(BUILD) BROKER=$(BROKER) bash examples/demo.sh

bench: all
	@BUILD=$(BUILD) bash bench/run.sh

# the seeded chaos runner (spec/chaos/chaos.py): seeds 1..SEEDS, or SEED=S
# alone (a replay); CHAOS_ARGS passes more options (--keep, -v, --records N).
# BROKER=kafka runs each seed on a real 3-broker Apache Kafka cluster of its
# own (spec/kafka/cluster.sh); any other BROKER (the default both included)
# runs on the embedded broker
SEEDS ?= 50
chaos: deps all
	@BUILD=$(BUILD) /usr/bin/python3 spec/chaos/chaos.py $(if $(SEED),--seed $(SEED),--seeds $(SEEDS)) $(if $(filter kafka,$(BROKER)),--broker kafka) $(CHAOS_ARGS)

# the chaos runner with lanes.transactional on the real cluster: zero lane
# duplicates (read_committed) required on every seed; short seeds unless LONG=1
chaos-txn: deps all
	@BUILD=$(BUILD) /usr/bin/python3 spec/chaos/chaos.py $(if $(SEED),--seed $(SEED),--seeds $(SEEDS)) --broker kafka --transactional $(if $(LONG),,--short) $(CHAOS_ARGS)

# the chaos runner with per-key fencing on the real cluster (source.fence =
# FENCE, ladder unless FENCE=ladder+dlq; ordering key): the audit's per-key
# order check fails a seed on any inversion; short seeds unless LONG=1
FENCE ?= ladder
chaos-fence: deps all
	@BUILD=$(BUILD) /usr/bin/python3 spec/chaos/chaos.py $(if $(SEED),--seed $(SEED),--seeds $(SEEDS)) --broker kafka --fence $(FENCE) $(if $(LONG),,--short) $(CHAOS_ARGS)

# the soak run (spec/chaos/soak.py): steady load and periodic faults for
# MINUTES, sampled every 10 s (table and CSV), trends checked, then audited
MINUTES ?= 30
soak: deps all
	@BUILD=$(BUILD) /usr/bin/python3 spec/chaos/soak.py --minutes $(MINUTES)

clean:
	rm -rf build build-san

# The man page's key reference (CONFIGURATION) is rendered from the key table
# in src/lib/config.c; c/test_config_doc fails until this has been run after
# a change of it.
config-doc: $(BUILD)/test_config_doc
	$(BUILD)/test_config_doc --print-man >$(BUILD)/config-keys.man
	awk -v f=$(BUILD)/config-keys.man '/^\.\\" config-keys: begin/ { print; while ((getline l <f) > 0) print l; skip = 1; next } \
	  /^\.\\" config-keys: end/ { skip = 0 } !skip' man/errgate.1 >$(BUILD)/errgate.1 && mv $(BUILD)/errgate.1 man/errgate.1

# ---- lint ---------------------------------------------------------------------
# The C house style is .clang-format (Debian's clang-format 14); `make format`
# applies it, `make lint` fails on any file that differs from it.
C_STYLE_FILES := $(wildcard src/*.c src/*/*.c src/*/*.h spec/c/*.c spec/c/*.h spec/fuzz/*.c spec/fuzz/*.h spec/tools/*.c \
                   bench/*.c examples/flaky-handler/*.c)
format:
	clang-format -i --style=file $(C_STYLE_FILES)

# luacheck reads .luacheckrc (which files, and the sandbox's globals for policies).
# The unit is checked as installed (ExecStart pointing at the built binary).
# systemd-analyze needs systemd; where it is missing the check is skipped, said.
lint: $(BUILD)/errgate
	clang-format --dry-run --Werror --style=file $(C_STYLE_FILES)
	luacheck --no-color -q .
	/usr/bin/python3 spec/check_calls.py
	mandoc -T lint man/errgate.1
	@if command -v systemd-analyze >/dev/null 2>&1; then \
	  rm -rf $(BUILD)/unit && mkdir -p $(BUILD)/unit && \
	  sed 's|@BINDIR@|$(abspath $(BUILD))|g' deploy/systemd/errgate@.service >$(BUILD)/unit/errgate@lint.service && \
	  echo "systemd-analyze verify deploy/systemd/errgate@.service" && \
	  out=$$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no $(BUILD)/unit/errgate@lint.service 2>&1); \
	  rc=$$?; [ -z "$$out" ] || echo "$$out"; [ $$rc = 0 ] && [ -z "$$out" ]; \
	else echo "lint: systemd-analyze not found: the service unit is not verified"; fi

# ---- install ------------------------------------------------------------------
# errgate finds its Lua runtime at BINDIR/../share/errgate/lua (luavm.c), so
# BINDIR and DATADIR stay siblings under PREFIX. The unit goes where systemd
# looks for PREFIX's units (/usr/local/lib/systemd/system for /usr/local).
PREFIX         ?= /usr/local
DESTDIR        ?=
BINDIR         := $(PREFIX)/bin
DATADIR        := $(PREFIX)/share/errgate
MANDIR         := $(PREFIX)/share/man
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SHARE_FILES    := $(wildcard lua/errgate/*.lua policies/*.lua policies/lib/*.lua) \
                  $(shell find -L examples -type f 2>/dev/null)

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(SYSTEMDUNITDIR)
	install -m 755 $(BUILD)/errgate $(DESTDIR)$(BINDIR)/errgate
	@for f in $(SHARE_FILES); do \
	  install -D -m $$([ -x $$f ] && echo 755 || echo 644) $$f $(DESTDIR)$(DATADIR)/$$f || exit 1; \
	done; echo "install: $(words $(SHARE_FILES)) files under $(DESTDIR)$(DATADIR)"
	install -m 644 man/errgate.1 $(DESTDIR)$(MANDIR)/man1/errgate.1
	sed 's|@BINDIR@|$(BINDIR)|g' deploy/systemd/errgate@.service >$(DESTDIR)$(SYSTEMDUNITDIR)/errgate@.service
	chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/errgate@.service

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/errgate $(DESTDIR)$(MANDIR)/man1/errgate.1 \
	      $(DESTDIR)$(SYSTEMDUNITDIR)/errgate@.service
	rm -rf $(DESTDIR)$(DATADIR)

-include $(OBJS:.o=.d)

# ---- fuzzing (spec/fuzz/README.md) ------------------------------------------
#   make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS="fuzz_x ..."]
#                   builds every libFuzzer target in build-fuzz/ with clang
#                   (ASan + UBSan + coverage) and runs each FUZZ_SECONDS on a
#                   copy of its corpus; findings land in build-fuzz/<target>-crash-*
#   make fuzz-merge adds what a run found (build-fuzz/corpus/) to
#                   spec/fuzz/corpus/, minimised
# `make test` replays every corpus file through every harness, built with
# $(CC) (and the sanitizers under SAN=1): no clang needed.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := build-fuzz
FUZZ_ALL     := $(patsubst spec/fuzz/%.c,%,$(wildcard spec/fuzz/fuzz_*.c))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer -Wall -Wextra -Werror -Wno-unused-parameter \
                -fno-strict-aliasing -fsanitize=address,undefined -fno-sanitize-recover=undefined -MMD -MP
FUZZ_OBJS    := $(patsubst src/%.c,$(FUZZ_BUILD)/obj/%.o,$(filter-out src/main.c,$(SRCS)))
FUZZ_REPLAYS := $(patsubst %,$(BUILD)/fuzz/%,$(FUZZ_ALL))
FUZZ_COMMON  := spec/fuzz/common.c spec/fuzz/fuzz.h

.PHONY: fuzz fuzz-build fuzz-merge fuzz-clean fuzz-cc
# the clang objects are kept between runs (make would delete them as intermediates)
.SECONDARY: $(FUZZ_OBJS)

$(FUZZ_BUILD)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(PC_CFLAGS) $(SRC_INC) -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: spec/fuzz/fuzz_%.c $(FUZZ_COMMON) $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(PC_CFLAGS) $(TEST_INC) -o $@ $< spec/fuzz/common.c $(FUZZ_OBJS) $(PC_LIBS)

$(FUZZ_BUILD)/obj/lib/redact.o: $(BUILD)/gen/redact_words.h
$(FUZZ_BUILD)/obj/lib/redact.o: FUZZ_CFLAGS += -I$(BUILD)/gen

fuzz-cc:
	@command -v $(FUZZ_CC) >/dev/null || { echo "fuzz: needs $(FUZZ_CC) with libFuzzer (apt-get install clang libclang-rt-14-dev)"; exit 1; }

fuzz-build: check-deps fuzz-cc $(addprefix $(FUZZ_BUILD)/,$(FUZZ_TARGETS))

# Each target runs on build-fuzz/corpus/<target> (seeded from the repo's
# corpus); -timeout: an input slower than 10 s is a finding.
fuzz: fuzz-build
	@set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t; cp -n spec/fuzz/corpus/$$t/* $(FUZZ_BUILD)/corpus/$$t/ 2>/dev/null || true; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  ERRGATE_LUA_DIR=$(CURDIR)/lua $(FUZZ_BUILD)/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/$$t- \
	    $(FUZZ_BUILD)/corpus/$$t 2>$(FUZZ_BUILD)/$$t.log || { tail -40 $(FUZZ_BUILD)/$$t.log; exit 1; }; \
	  grep -E '^stat::number_of_executed_units|^Done' $(FUZZ_BUILD)/$$t.log | tr '\n' ' '; echo; \
	done

fuzz-merge: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  [ -d $(FUZZ_BUILD)/corpus/$$t ] || continue; \
	  ERRGATE_LUA_DIR=$(CURDIR)/lua $(FUZZ_BUILD)/$$t -merge=1 -timeout=10 spec/fuzz/corpus/$$t $(FUZZ_BUILD)/corpus/$$t \
	    2>$(FUZZ_BUILD)/$$t.merge.log; echo "fuzz-merge: $$t: $$(ls spec/fuzz/corpus/$$t | wc -l) files"; \
	done

# The corpus replays of `make test` (spec/fuzz/replay_main.c, no libFuzzer).
$(BUILD)/fuzz/fuzz_%: spec/fuzz/fuzz_%.c spec/fuzz/replay_main.c $(FUZZ_COMMON) $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PC_CFLAGS) $(TEST_INC) -o $@ $< spec/fuzz/replay_main.c spec/fuzz/common.c $(LIB_OBJS) \
	  $(LDFLAGS) $(PC_LIBS)

test: $(FUZZ_REPLAYS)

clean: fuzz-clean
fuzz-clean:
	rm -rf $(FUZZ_BUILD)

-include $(FUZZ_OBJS:.o=.d)
