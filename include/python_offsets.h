/*
 * Where CPython keeps what a memory profiler reads of it, per version:
 * the thread state's frame chain, a frame's code and instruction, a code
 * object's names, a string's characters.  Offsets in bytes on x86-64, as
 * the interpreter's internal headers have them (measured with offsetof on
 * python3.11-dev's headers: tests/real/python.sh checks this table against
 * them where they are installed).  CPython 3.13 and later publish theirs
 * in _PyRuntime (_Py_DebugOffsets); before that a table per minor version
 * is the only way (py-spy, austin and pyroscope keep one too).  A version
 * without a row gets native frames only, said once: never a guess.
 *
 * Shared by the recorder (a preload library of its own, which links
 * nothing of dmprof) and dmprof: a header of data only.
 */
#ifndef DMPROF_PYTHON_OFFSETS_H
#define DMPROF_PYTHON_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

struct python_offsets {
	uint8_t major, minor;
	/* _PyRuntimeState: the thread holding the GIL
	 * (gilstate.tstate_current), and the one finalizing the runtime
	 * (set once Py_FinalizeEx has run the atexit handlers, before it
	 * frees the modules and their objects). */
	uint16_t runtime_tstate_current, runtime_finalizing;
	/* PyThreadState */
	uint16_t tstate_cframe;
	/* _PyCFrame */
	uint16_t cframe_current_frame;
	/* _PyInterpreterFrame */
	uint16_t frame_code, frame_previous, frame_prev_instr, frame_is_entry;
	/* PyCodeObject: co_code_adaptive is where the instructions start
	 * (prev_instr points into it) */
	uint16_t code_firstlineno, code_filename, code_name, code_qualname,
		code_linetable, code_adaptive;
	/* PyObject, PyTypeObject */
	uint16_t ob_type, type_name;
	/* PyASCIIObject / PyCompactUnicodeObject: length, the state bits
	 * (kind 2-4, compact 5, ascii 6), and where the characters of a
	 * compact ASCII string and of another compact string start */
	uint16_t str_length, str_state, str_ascii_data, str_compact_data;
};

#ifndef PYTHON_OFFSETS_NONE
static const struct python_offsets python_offsets_table[] = {
	{
		.major = 3, .minor = 11,
		.runtime_tstate_current = 576, .runtime_finalizing = 24,
		.tstate_cframe = 56,
		.cframe_current_frame = 8,
		.frame_code = 32, .frame_previous = 48,
		.frame_prev_instr = 56, .frame_is_entry = 68,
		.code_firstlineno = 72, .code_filename = 112,
		.code_name = 120, .code_qualname = 128,
		.code_linetable = 136, .code_adaptive = 184,
		.ob_type = 8, .type_name = 24,
		.str_length = 16, .str_state = 32,
		.str_ascii_data = 48, .str_compact_data = 72,
	},
};
#define PYTHON_OFFSETS_N \
	(sizeof(python_offsets_table) / sizeof(python_offsets_table[0]))
#else
/* (A build without any row: how a version without one behaves.) */
static const struct python_offsets python_offsets_table[1];
#define PYTHON_OFFSETS_N 0
#endif

/* The row of MAJOR.MINOR, or NULL. */
static inline const struct python_offsets *python_offsets_for(unsigned major,
							      unsigned minor)
{
	for (size_t i = 0; i < PYTHON_OFFSETS_N; i++)
		if (python_offsets_table[i].major == major &&
		    python_offsets_table[i].minor == minor)
			return &python_offsets_table[i];
	return NULL;
}

#endif
