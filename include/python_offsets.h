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
	 * (gilstate.tstate_current), the one finalizing the runtime (set
	 * once Py_FinalizeEx has run the atexit handlers, before it frees
	 * the modules and their objects), the main interpreter
	 * (interpreters.main). */
	uint16_t runtime_tstate_current, runtime_finalizing,
		runtime_interp_main;
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
	/* What a walk of the heap reads of objects (dmprof snapshot): a
	 * type's flags, and its flags that say an object's layout: a
	 * PyGC_Head of GC_HEAD bytes before a collected object, and before
	 * that (managed dict) the object's values and dict pointers; the
	 * out-of-line storage of a dict (keys, values), a list (items), a
	 * bytearray (bytes) and a set (its table, unless the small one
	 * inside it) */
	uint16_t type_flags, gc_head;
	uint32_t flag_managed_dict, flag_have_gc;
	uint16_t dict_keys, dict_values, list_items, bytearray_bytes,
		set_table, set_smalltable;
	/* What a value is said by (dmprof expand -t, describe): a
	 * variable-size object's ob_size (a list's, tuple's, bytes',
	 * bytearray's, an int's digits, signed), a dict's ma_used, a set's
	 * used, where an int's 30-bit digits, a float's double and the
	 * bytes of a bytes object start */
	uint16_t var_size, dict_used, set_used, long_digits, float_value,
		bytes_data;
	/* The free lists the recorder keeps empty (rec_python.c): a
	 * thread's interpreter, and in the interpreter the dicts' and the
	 * lists' (an array and its count), the tuples' (a linked list and a
	 * count for each size of 1 to TUPLE_LISTS items, linked through a
	 * tuple's first item) and the floats' (a count, then a linked list);
	 * how many tuples of a size and how many floats they hold at most; a
	 * type's tp_dealloc and tp_free */
	uint16_t tstate_interp, dicts_free, dicts_nfree, lists_free,
		lists_nfree, tuples_free, tuples_nfree, tuple_lists,
		tuple_items, tuples_max, floats_nfree, floats_free, floats_max,
		type_dealloc, type_free;
};

/*
 * pymalloc, the object allocator (Objects/obmalloc.c: defines of that
 * file alone, in no header, so checked by a walk's counts against
 * sys._debugmallocstats() rather than by offsetof): arenas of ARENA_SIZE
 * bytes mmapped apart, cut into POOLs of POOL_SIZE from the first
 * POOL_SIZE-aligned address on, each pool one size class (of ALIGNMENT
 * bytes each: NCLASSES of them) after its header of POOL_OVERHEAD; the
 * arenas' table (struct arena_object, ARENA_OBJECT bytes) malloc'd, a
 * file-static pointer to it.
 */
struct pymalloc_layout {
	uint8_t major, minor;
	uint32_t arena_size, pool_size;
	uint16_t pool_overhead, alignment, nclasses, arena_object;
	/* struct pool_header */
	uint16_t pool_count, pool_freeblock, pool_arenaindex, pool_szidx,
		pool_nextoffset, pool_maxnextoffset;
	/* struct arena_object */
	uint16_t arena_address, arena_pool_address, arena_nfreepools,
		arena_ntotalpools;
};

#ifndef PYTHON_OFFSETS_NONE
static const struct python_offsets python_offsets_table[] = {
	{
		.major = 3, .minor = 11,
		.runtime_tstate_current = 576, .runtime_finalizing = 24,
		.runtime_interp_main = 48,
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
		.type_flags = 168, .gc_head = 16,
		.flag_managed_dict = 1u << 4, .flag_have_gc = 1u << 14,
		.dict_keys = 32, .dict_values = 40, .list_items = 24,
		.bytearray_bytes = 32, .set_table = 40, .set_smalltable = 64,
		.var_size = 16, .dict_used = 16, .set_used = 24,
		.long_digits = 24, .float_value = 16, .bytes_data = 32,
		.tstate_interp = 16, .dicts_free = 4520, .dicts_nfree = 5160,
		.lists_free = 3872, .lists_nfree = 4512, .tuples_free = 3632,
		.tuples_nfree = 3792, .tuple_lists = 20, .tuple_items = 24,
		.tuples_max = 2000,
		.floats_nfree = 3608, .floats_free = 3616, .floats_max = 100,
		.type_dealloc = 48, .type_free = 320,
	},
};
static const struct pymalloc_layout pymalloc_table[] = {
	{
		.major = 3, .minor = 11,
		.arena_size = 1u << 20, .pool_size = 1u << 14,
		.pool_overhead = 48, .alignment = 16, .nclasses = 32,
		.arena_object = 48,
		.pool_count = 0, .pool_freeblock = 8, .pool_arenaindex = 32,
		.pool_szidx = 36, .pool_nextoffset = 40,
		.pool_maxnextoffset = 44,
		.arena_address = 0, .arena_pool_address = 8,
		.arena_nfreepools = 16, .arena_ntotalpools = 20,
	},
};
#define PYTHON_OFFSETS_N \
	(sizeof(python_offsets_table) / sizeof(python_offsets_table[0]))
#else
/* (A build without any row: how a version without one behaves.) */
static const struct python_offsets python_offsets_table[1];
static const struct pymalloc_layout pymalloc_table[1];
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

/* pymalloc's layout in MAJOR.MINOR, or NULL. */
static inline const struct pymalloc_layout *pymalloc_layout_for(
	unsigned major, unsigned minor)
{
	for (size_t i = 0; i < PYTHON_OFFSETS_N; i++)
		if (pymalloc_table[i].major == major &&
		    pymalloc_table[i].minor == minor)
			return &pymalloc_table[i];
	return NULL;
}

#endif
