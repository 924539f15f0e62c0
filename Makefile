# nklab - build, test, demo.
#   make demo   build and run the walkthrough (NKI's profiling example in C)
#   make test   build and run every test (also under ASan/UBSan)
#   make bench  speed of the tool itself
#   make calibrate  the timing model's micro-benchmarks against the documented figures
#   make fuzz   fuzz every reader and consumer, FUZZ_SECONDS (60) per target
#   make install PREFIX=DIR  nklab, libnklab.a, nklab.h, pkg-config file

CC ?= cc
CFLAGS ?= -O2 -g
WARN = -Wall -Wextra -Wno-missing-field-initializers
CPPFLAGS = -std=c11 -D_DEFAULT_SOURCE -Iinclude -Isrc -Ikernels
# OpenBLAS's single-threaded build: the executor calls sgemm on tiles of at
# most 128x512 from one thread, and the threaded build's idle workers only
# burn CPU (and skew bench's %USER).
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
BLAS_DIR ?= /usr/lib/$(MULTIARCH)/openblas-serial
CPPFLAGS += -I/usr/include/$(MULTIARCH)/openblas-serial
# It is not linked: the library loads it when the first matmul runs
# (src/exec/blas.c), this build first; a process that runs none does not
# pay its start-up.
CPPFLAGS += -DNK_BLAS_LIB='"$(BLAS_DIR)/libopenblas.so.0"'
BLAS_LIBS = -L$(BLAS_DIR) -Wl,-rpath,$(BLAS_DIR) -lopenblas
# SLEEF (libsleef-dev): the executor's vectorised exp, log, sin, cos and
# arctan; loaded, like OpenBLAS, when the first of them runs
# (src/exec/vmath.c), not linked.
LDLIBS = -lm -lpthread -ldl
BUILD ?= build
# Only what include/nklab.h and kernels/kernels.h declare is exported (their
# visibility pragma); every other function of the library stays hidden, also
# from the kernels that `nklab run` loads into the CLI (-rdynamic).
VIS = -fvisibility=hidden

LIB_SRC = $(wildcard src/core/*.c src/isa/*.c src/arch/*.c src/trace/*.c src/sched/*.c src/exec/*.c src/rt/*.c \
                     src/timing/*.c src/profile/*.c src/view/*.c src/bench/*.c src/insights/*.c src/calib/*.c)
KERN_SRC = $(wildcard kernels/*.c)
CLI_SRC = $(wildcard src/cli/*.c)
TESTS ?= $(wildcard tests/unit/test_*.c)
TEST_SRC = tests/unit/main.c tests/unit/oomhook.c $(TESTS)
# The unit binary's allocations go through tests/unit/oomhook.c, which can
# fail the Nth one (tests/unit/test_oom.c).
OOM_WRAP = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup,--wrap=realpath

LIB_OBJ = $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/view_assets.o
KERN_OBJ = $(KERN_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/kernel_sources.o
CLI_OBJ = $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ = $(TEST_SRC:%.c=$(BUILD)/%.o)
HDRS = $(wildcard include/*.h src/*.h src/*/*.h kernels/*.h tests/unit/*.h)

.PHONY: all deps demo test test-fast bench fuzz clean install FORCE
all: $(BUILD)/nklab $(BUILD)/test_nklab

deps: $(BUILD)/.deps
$(BUILD)/.deps: scripts/install-deps.sh
	@mkdir -p $(BUILD)
	@scripts/install-deps.sh build
	@touch $@

$(BUILD)/%.o: %.c $(HDRS) $(BUILD)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(VIS) $(WARN) -c $< -o $@

# The viewer's HTML/CSS/JS, embedded into the library as C arrays.
VIEW_ASSETS = src/view/assets/viewer.html src/view/assets/viewer.css src/view/assets/viewer.js
$(BUILD)/gen/view_assets.c: $(VIEW_ASSETS) scripts/embed-assets.sh
	@mkdir -p $(dir $@)
	scripts/embed-assets.sh $@ nk__view_asset_html=src/view/assets/viewer.html \
	    nk__view_asset_css=src/view/assets/viewer.css nk__view_asset_js=src/view/assets/viewer.js
$(BUILD)/gen/view_assets.o: $(BUILD)/gen/view_assets.c
	$(CC) $(CFLAGS) $(VIS) -c $< -o $@

# The built-in kernels' sources, embedded into the kernels library under the
# paths their __FILE__ records (kernels/sources.c), so their profiles hold the
# source text wherever they are captured.
$(BUILD)/gen/kernel_sources.c: $(KERN_SRC) scripts/embed-assets.sh
	@mkdir -p $(dir $@)
	scripts/embed-assets.sh --table nk__kernel_src $@ $(KERN_SRC)
$(BUILD)/gen/kernel_sources.o: $(BUILD)/gen/kernel_sources.c
	$(CC) $(CFLAGS) $(VIS) -c $< -o $@

$(BUILD)/libnklab.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libnklab_kernels.a: $(KERN_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/nklab: $(CLI_OBJ) $(BUILD)/libnklab_kernels.a $(BUILD)/libnklab.a
	$(CC) $(CFLAGS) -rdynamic -o $@ $^ $(LDLIBS) -ldl

# The unit tests also cover the CLI's .npy reader and writer.
# The unit-test binary is relinked when the selection of test files
# (TESTS=...) changes, not only when an object does.
$(BUILD)/.tests: FORCE
	@mkdir -p $(BUILD)
	@echo '$(TESTS)' | cmp -s - $@ || echo '$(TESTS)' > $@
FORCE:
$(BUILD)/test_nklab: $(TEST_OBJ) $(BUILD)/src/cli/npy.o $(BUILD)/libnklab_kernels.a $(BUILD)/libnklab.a $(BUILD)/.tests
	$(CC) $(CFLAGS) $(OOM_WRAP) -o $@ $(filter-out $(BUILD)/.tests,$^) $(LDLIBS)

# Helper of the CLI tests: writes random .npy files, computes references,
# compares with tolerances (its own .npy code, independent of the library).
$(BUILD)/npytool: tests/cli/npytool.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $< -lm

# Benchmarks: each bench/NAME.c is its own program against the libraries.
BENCH_BIN = $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/*.c))
$(BUILD)/bench/%: bench/%.c $(HDRS) $(wildcard bench/*.h) $(BUILD)/libnklab_kernels.a $(BUILD)/libnklab.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $< $(BUILD)/libnklab_kernels.a $(BUILD)/libnklab.a $(BENCH_LIBS) $(LDLIBS)
# the executor's benchmark calls sgemm itself, as its reference
$(BUILD)/bench/bench_exec_matmul: BENCH_LIBS = $(BLAS_LIBS)

# The sanitizer build ($(BUILD)/asan): ASan, UBSan and the library's
# invariants (NK_ASSERT, src/core/nkassert.h).
SAN_CFLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -DNK_DEBUG

# The whole suite: unit tests, then the same tests and the CLI under
# ASan/UBSan, then the CLI tests (some of them against the sanitizer build's
# CLI too); prints "N passed, N failed" last.
test: $(BUILD)/nklab $(BUILD)/test_nklab python
	@scripts/install-deps.sh test
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/asan CC=clang CFLAGS="$(SAN_CFLAGS)" \
	    $(BUILD)/asan/test_nklab $(BUILD)/asan/nklab
	@NK_BUILD=$(BUILD) scripts/run-tests.sh

test-fast: $(BUILD)/test_nklab
	$(BUILD)/test_nklab

# The fuzz targets (tests/fuzz), one after another, each FUZZ_SECONDS long,
# growing their corpora in $(BUILD)/fuzz/corpus from one run to the next;
# the test suite runs the same targets a few seconds each.
FUZZ_SECONDS ?= 60
fuzz:
	@FUZZ_BUILD=$(BUILD)/fuzz FUZZ_TIME=$(FUZZ_SECONDS) FUZZ_RUNS=-1 FUZZ_KEEP=1 tests/fuzz/run.sh

bench: $(BENCH_BIN)
	@for b in $(BENCH_BIN); do echo "== $$b"; $$b || exit 1; done

# The timing model's micro-benchmarks beside the documented figures
# (docs/timing-model.md); fails if one is outside its tolerance.
.PHONY: calibrate
calibrate: $(BUILD)/nklab
	$(BUILD)/nklab calibrate report

# The walkthrough: NKI's profiling example (exp over [250, 512]) as a C file,
# run, benchmarked, profiled and summarised with the nklab just built.
demo: $(BUILD)/nklab
	@NK_BUILD=$(BUILD) scripts/demo.sh

# make install [PREFIX=/usr/local] [DESTDIR=...]: the nklab command, the
# libraries, the headers (kernels.h as nklab_kernels.h) and a pkg-config file.
# The installed nklab finds nklab.h for user kernels in <bindir>/../include.
PREFIX ?= /usr/local
NK_VERSION_STR = $(shell sed -n 's/^\#define NK_VERSION "\(.*\)"/\1/p' include/nklab.h)
install: $(BUILD)/nklab $(BUILD)/libnklab.a $(BUILD)/libnklab_kernels.a nklab.pc.in
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(BUILD)/nklab $(DESTDIR)$(PREFIX)/bin/nklab
	install -m 644 $(BUILD)/libnklab.a $(BUILD)/libnklab_kernels.a $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/nklab.h $(DESTDIR)$(PREFIX)/include/nklab.h
	install -m 644 kernels/kernels.h $(DESTDIR)$(PREFIX)/include/nklab_kernels.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(NK_VERSION_STR)|g' nklab.pc.in \
	    >$(DESTDIR)$(PREFIX)/lib/pkgconfig/nklab.pc

clean:
	rm -rf build

# The Python front-end: the extension and its package (python/python.mk).
include python/python.mk

# `make bench` also sets elementwise @nki.jit kernels against numpy.
BENCH_BIN += $(BUILD)/bench/python_elementwise
bench: $(BUILD)/bench/python_elementwise
$(BUILD)/bench/python_elementwise: bench/python_elementwise.py $(BUILD)/nklab python
	@mkdir -p $(dir $@)
	printf '#!/bin/sh\nexec "%s/nklab" python "%s/bench/python_elementwise.py" "$$@"\n' "$(abspath $(BUILD))" "$(CURDIR)" >$@
	chmod +x $@
