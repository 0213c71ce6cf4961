/*
 * The offsets of include/python_offsets.h as the installed CPython's own
 * internal headers have them: built against python3.X-dev's headers by
 * tests/real/python.sh, which compares the two.  Prints "FIELD OFFSET".
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_gc.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#include <stddef.h>
#include <stdio.h>

#define P(name, value) printf("%s %zu\n", name, (size_t)(value))

int main(void)
{
	P("major", PY_MAJOR_VERSION);
	P("minor", PY_MINOR_VERSION);
	P("runtime_tstate_current",
	  offsetof(_PyRuntimeState, gilstate.tstate_current));
	P("runtime_finalizing", offsetof(_PyRuntimeState, _finalizing));
	P("runtime_interp_main", offsetof(_PyRuntimeState, interpreters.main));
	P("tstate_cframe", offsetof(PyThreadState, cframe));
	P("cframe_current_frame", offsetof(_PyCFrame, current_frame));
	P("frame_code", offsetof(_PyInterpreterFrame, f_code));
	P("frame_previous", offsetof(_PyInterpreterFrame, previous));
	P("frame_prev_instr", offsetof(_PyInterpreterFrame, prev_instr));
	P("frame_is_entry", offsetof(_PyInterpreterFrame, is_entry));
	P("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
	P("code_filename", offsetof(PyCodeObject, co_filename));
	P("code_name", offsetof(PyCodeObject, co_name));
	P("code_qualname", offsetof(PyCodeObject, co_qualname));
	P("code_linetable", offsetof(PyCodeObject, co_linetable));
	P("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
	P("ob_type", offsetof(PyObject, ob_type));
	P("type_name", offsetof(PyTypeObject, tp_name));
	P("str_length", offsetof(PyASCIIObject, length));
	P("str_state", offsetof(PyASCIIObject, state));
	P("str_ascii_data", sizeof(PyASCIIObject));
	P("str_compact_data", sizeof(PyCompactUnicodeObject));
	P("type_flags", offsetof(PyTypeObject, tp_flags));
	P("gc_head", sizeof(PyGC_Head));
	P("flag_managed_dict", Py_TPFLAGS_MANAGED_DICT);
	P("flag_have_gc", Py_TPFLAGS_HAVE_GC);
	P("dict_keys", offsetof(PyDictObject, ma_keys));
	P("dict_values", offsetof(PyDictObject, ma_values));
	P("list_items", offsetof(PyListObject, ob_item));
	P("bytearray_bytes", offsetof(PyByteArrayObject, ob_bytes));
	P("set_table", offsetof(PySetObject, table));
	P("set_smalltable", offsetof(PySetObject, smalltable));
	P("var_size", offsetof(PyVarObject, ob_size));
	P("dict_used", offsetof(PyDictObject, ma_used));
	P("set_used", offsetof(PySetObject, used));
	P("long_digits", offsetof(PyLongObject, ob_digit));
	P("float_value", offsetof(PyFloatObject, ob_fval));
	P("bytes_data", offsetof(PyBytesObject, ob_sval));
	P("tstate_interp", offsetof(PyThreadState, interp));
	P("dicts_free", offsetof(PyInterpreterState, dict_state.free_list));
	P("dicts_nfree", offsetof(PyInterpreterState, dict_state.numfree));
	P("lists_free", offsetof(PyInterpreterState, list.free_list));
	P("lists_nfree", offsetof(PyInterpreterState, list.numfree));
	P("tuples_free", offsetof(PyInterpreterState, tuple.free_list));
	P("tuples_nfree", offsetof(PyInterpreterState, tuple.numfree));
	P("tuple_lists", PyTuple_NFREELISTS);
	P("tuple_items", offsetof(PyTupleObject, ob_item));
	P("tuples_max", PyTuple_MAXFREELIST);
	P("floats_nfree", offsetof(PyInterpreterState, float_state.numfree));
	P("floats_free", offsetof(PyInterpreterState, float_state.free_list));
	P("floats_max", PyFloat_MAXFREELIST);
	P("type_dealloc", offsetof(PyTypeObject, tp_dealloc));
	P("type_free", offsetof(PyTypeObject, tp_free));
	return 0;
}
