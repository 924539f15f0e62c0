# nklab - build, test, demo.
#   make demo   build and run the walkthrough (NKI's profiling example in C)
#   make test   build and run every test (also under ASan/UBSan)
#   make bench  speed of the tool itself

CC ?= cc
CFLAGS ?= -O2 -g
WARN = -Wall -Wextra -Wno-missing-field-initializers
CPPFLAGS = -std=c11 -D_DEFAULT_SOURCE -Iinclude -Isrc -Ikernels
LDLIBS = -lopenblas -lm -lpthread
BUILD ?= build

LIB_SRC = $(wildcard src/core/*.c src/arch/*.c src/trace/*.c src/sched/*.c src/exec/*.c src/rt/*.c \
                     src/timing/*.c src/profile/*.c src/view/*.c src/bench/*.c)
KERN_SRC = $(wildcard kernels/*.c)
CLI_SRC = $(wildcard src/cli/*.c)
TESTS ?= $(wildcard tests/unit/test_*.c)
TEST_SRC = tests/unit/main.c $(TESTS)

LIB_OBJ = $(LIB_SRC:%.c=$(BUILD)/%.o)
KERN_OBJ = $(KERN_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ = $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ = $(TEST_SRC:%.c=$(BUILD)/%.o)
HDRS = $(wildcard include/*.h src/*.h src/*/*.h kernels/*.h tests/unit/*.h)

.PHONY: all deps demo test test-fast bench clean
all: $(BUILD)/nklab $(BUILD)/test_nklab

deps: $(BUILD)/.deps
$(BUILD)/.deps: scripts/install-deps.sh
	@mkdir -p $(BUILD)
	@scripts/install-deps.sh build
	@touch $@

$(BUILD)/%.o: %.c $(HDRS) $(BUILD)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -c $< -o $@

$(BUILD)/libnklab.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libnklab_kernels.a: $(KERN_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/nklab: $(CLI_OBJ) $(BUILD)/libnklab_kernels.a $(BUILD)/libnklab.a
	$(CC) $(CFLAGS) -rdynamic -o $@ $^ $(LDLIBS) -ldl

$(BUILD)/test_nklab: $(TEST_OBJ) $(BUILD)/libnklab_kernels.a $(BUILD)/libnklab.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The whole suite: unit tests, then the same tests under ASan/UBSan, then the
# CLI tests; prints "N passed, N failed" last.
test: $(BUILD)/nklab $(BUILD)/test_nklab
	@scripts/install-deps.sh test
	@$(MAKE) --no-print-directory BUILD=build/asan CC=clang \
	    CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	    build/asan/test_nklab
	@scripts/run-tests.sh

test-fast: $(BUILD)/test_nklab
	$(BUILD)/test_nklab

demo: $(BUILD)/nklab
	@scripts/demo.sh

clean:
	rm -rf build
