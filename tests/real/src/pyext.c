/*
 * A C extension for tests/real/python.sh: pyext.native_thread(N) starts
 * a thread that never holds the GIL nor has a Python thread state, which
 * mallocs N blocks of 1 KiB and keeps them, and returns N once it ended.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdlib.h>

/* (Visible: kept, so that the compiler keeps the mallocs.) */
void **pyext_kept;

static __attribute__((noinline)) void *native_worker(void *arg)
{
	long n = (long)arg;

	pyext_kept = malloc((size_t)n * sizeof(*pyext_kept));
	for (long i = 0; pyext_kept && i < n; i++)
		pyext_kept[i] = malloc(1024);
	return NULL;
}

static PyObject *native_thread(PyObject *self, PyObject *args)
{
	long n;
	pthread_t t;

	(void)self;
	if (!PyArg_ParseTuple(args, "l", &n))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	if (pthread_create(&t, NULL, native_worker, (void *)n) == 0)
		pthread_join(t, NULL);
	Py_END_ALLOW_THREADS
	return PyLong_FromLong(n);
}

static PyMethodDef methods[] = {
	{ "native_thread", native_thread, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "pyext", NULL, -1,
				     methods, NULL, NULL, NULL, NULL };

PyMODINIT_FUNC PyInit_pyext(void)
{
	return PyModule_Create(&module);
}
