# python.mk - the Python front-end (included by the Makefile).
#
#   $(BUILD)/python/nklab/   the package: glue (.py) and the extension _nklab*.so
#   $(BUILD)/python/shim/    neuronxcc and nki, resolving to nklab; put on
#                            PYTHONPATH by `nklab python` only
#
# The extension is the library compiled again position-independent
# ($(BUILD)/pic/...) and linked with hidden visibility, built against
# Debian's python3 (python3-dev) and numpy (python3-numpy).

PYTHON ?= /usr/bin/python3
PY_INC := $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_paths()['include'])" 2>/dev/null)
PY_EXT := $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))" 2>/dev/null)
# evaluated when used: numpy may be installed by the deps step of this run
NP_INC = $(shell $(PYTHON) -c "import numpy; print(numpy.get_include())" 2>/dev/null)

PY_DIR = $(BUILD)/python
PY_EXT_SO = $(PY_DIR)/nklab/_nklab$(PY_EXT)
PY_C_SRC = $(wildcard python/nklab/*.c)
PY_C_HDR = $(wildcard python/nklab/*.h)
PY_GLUE = $(patsubst python/%,$(PY_DIR)/%,$(shell find python/nklab python/shim -name '*.py' 2>/dev/null))
PIC_CLI_SRC = $(filter-out src/cli/main.c src/cli/cmd_python.c,$(CLI_SRC))
PIC_OBJ = $(patsubst %.c,$(BUILD)/pic/%.o,$(LIB_SRC) $(KERN_SRC) $(PIC_CLI_SRC)) \
          $(BUILD)/pic/gen/view_assets.o $(BUILD)/pic/gen/kernel_sources.o
PY_OBJ = $(patsubst %.c,$(BUILD)/pic/%.o,$(PY_C_SRC))
PIC_FLAGS = -fPIC -fvisibility=hidden

.PHONY: python
all: python
python: $(PY_EXT_SO) $(PY_GLUE)

$(BUILD)/pic/%.o: %.c $(HDRS) $(BUILD)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PIC_FLAGS) $(WARN) -c $< -o $@

$(BUILD)/pic/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PIC_FLAGS) -c $< -o $@

$(BUILD)/pic/python/nklab/%.o: python/nklab/%.c $(HDRS) $(PY_C_HDR) $(BUILD)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PIC_FLAGS) $(WARN) -Ipython/nklab -Isrc/cli -I$(PY_INC) -I$(NP_INC) \
	    -DNPY_NO_DEPRECATED_API=NPY_1_7_API_VERSION -c $< -o $@

# The extension exports its module init only (python/nklab/exports.map): the
# library's API, visible in its objects, is not re-exported into the process.
$(PY_EXT_SO): $(PY_OBJ) $(PIC_OBJ) python/nklab/exports.map
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared -Wl,--version-script=python/nklab/exports.map -o $@ $(filter %.o,$^) $(LDLIBS) -ldl

$(PY_DIR)/%.py: python/%.py
	@mkdir -p $(dir $@)
	cp $< $@

# `make bench` also runs the Python front-end's call-overhead benchmark.
BENCH_BIN += $(BUILD)/bench/python_call
bench: $(BUILD)/bench/python_call
$(BUILD)/bench/python_call: bench/python_call.py $(BUILD)/nklab python
	@mkdir -p $(dir $@)
	printf '#!/bin/sh\nexec "%s/nklab" python "%s/bench/python_call.py" "$$@"\n' "$(abspath $(BUILD))" "$(CURDIR)" >$@
	chmod +x $@

# make install: the package and the shim under $(PREFIX)/lib/nklab/python,
# where the installed nklab looks for them (nothing goes to site-packages).
.PHONY: install-python
install: install-python
install-python: python
	install -d $(DESTDIR)$(PREFIX)/lib/nklab/python
	rm -rf $(DESTDIR)$(PREFIX)/lib/nklab/python/nklab $(DESTDIR)$(PREFIX)/lib/nklab/python/shim
	cp -r $(PY_DIR)/nklab $(PY_DIR)/shim $(DESTDIR)$(PREFIX)/lib/nklab/python/
	find $(DESTDIR)$(PREFIX)/lib/nklab/python -name __pycache__ -prune -exec rm -rf {} +

# make demo starts with the profiling example as its NKI Python file.
demo: python
