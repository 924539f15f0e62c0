/*
 * cli.c - `nklab run|bench|profile FILE.py:FUNCTION ...` inside Python: the
 * nklab command re-executes itself as `python3 -m nklab._cli CMD ...`
 * (src/cli/cmd_python.c), and this runs the same command code with a loader
 * for Python kernels.
 */
#include "pynk.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "userkernel.h"

int nk_cli_error(int code, const char *fmt, ...)
{
    va_list ap;
    fputs("nklab: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

/* FUNCTION of the file path: the file runs as module __nklab_kernel__ (its
 * `if __name__ == "__main__":` part does not). */
static int py_loader(const char *path, const char *function, nk_kernel_fn *fn, char *err, size_t errlen)
{
    PyObject *util = PyImport_ImportModule("importlib.util");
    PyObject *spec = util ? PyObject_CallMethod(util, "spec_from_file_location", "ss", "__nklab_kernel__", path)
                          : NULL;
    PyObject *mod = spec && spec != Py_None ? PyObject_CallMethod(util, "module_from_spec", "O", spec) : NULL;
    PyObject *loader = mod ? PyObject_GetAttrString(spec, "loader") : NULL;
    PyObject *r = loader ? PyObject_CallMethod(loader, "exec_module", "O", mod) : NULL;
    PyObject *obj = r ? PyObject_GetAttrString(mod, function) : NULL;
    int rc = -1;
    if (obj) {
        PyObject *k = PyObject_TypeCheck(obj, &pynk_KernelType)
                          ? (Py_INCREF(obj), obj)
                          : PyObject_CallFunctionObjArgs((PyObject *)&pynk_KernelType, obj, NULL);
        if (k && !pynk_cli_set_kernel(k)) {
            *fn = pynk_cli_trampoline;
            rc = 0;
        }
        Py_XDECREF(k);
    }
    if (rc) {
        if (PyErr_Occurred()) {
            if (!obj && r && PyErr_ExceptionMatches(PyExc_AttributeError)) {
                PyErr_Clear();
                snprintf(err, errlen, "%s has no function '%s'", path, function);
            } else {
                PyErr_Print();
                snprintf(err, errlen, "%s: the Python file did not load", path);
            }
        } else {
            snprintf(err, errlen, "cannot load %s", path);
        }
    }
    Py_XDECREF(util);
    Py_XDECREF(spec);
    Py_XDECREF(mod);
    Py_XDECREF(loader);
    Py_XDECREF(r);
    Py_XDECREF(obj);
    return rc;
}

static PyObject *cli_main(PyObject *self, PyObject *arg)
{
    (void)self;
    PyObject *seq = PySequence_Fast(arg, "_cli_main(argv)");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > 4096) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "_cli_main(['run'|'bench'|'profile', ...])");
        return NULL;
    }
    char **argv = calloc((size_t)n + 1, sizeof *argv);
    for (Py_ssize_t i = 0; argv && i < n; i++) {
        const char *s = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
        argv[i] = s ? strdup(s) : NULL;
        if (!argv[i]) {
            for (Py_ssize_t j = 0; j < i; j++)
                free(argv[j]);
            free(argv);
            Py_DECREF(seq);
            return PyErr_Occurred() ? NULL : PyErr_NoMemory();
        }
    }
    Py_DECREF(seq);
    if (!argv)
        return PyErr_NoMemory();
    nk_builtin_kernel_sources_register();
    nk_cli_py_loader = py_loader;
    nk_cli_py_params = pynk_cli_params;
    int (*cmd)(int, char **) = !strcmp(argv[0], "run") ? nk_cmd_run
                               : !strcmp(argv[0], "bench") ? nk_cmd_bench
                               : !strcmp(argv[0], "profile") ? nk_cmd_profile
                                                             : NULL;
    int code;
    if (!cmd)
        code = nk_cli_error(NK_EXIT_USAGE, "'%s' does not run Python kernels (run, bench, profile do)", argv[0]);
    else
        code = cmd((int)n, argv);
    fflush(stdout);
    nk_cli_py_loader = NULL;
    nk_cli_py_params = NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        free(argv[i]);
    free(argv);
    pynk_cli_set_kernel(NULL);
    PyErr_Clear();
    return PyLong_FromLong(code);
}

PyMethodDef pynk_cli_methods[] = {
    {"_cli_main", cli_main, METH_O, "_cli_main(argv): nklab run|bench|profile with FILE.py:FUNCTION kernels"},
    {NULL, NULL, 0, NULL},
};
