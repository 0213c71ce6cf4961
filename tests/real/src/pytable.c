/*
 * The row of include/python_offsets.h for MAJOR.MINOR, in the form
 * pyoffsets.c prints (tests/real/python.sh compares the two); exits 1
 * when the table has no row for it.  Usage: pytable MAJOR MINOR
 */
#include <stdio.h>
#include <stdlib.h>

#include "python_offsets.h"

#define P(field) printf("%s %u\n", #field, (unsigned)o->field)

int main(int argc, char **argv)
{
	const struct python_offsets *o;

	if (argc != 3)
		return 2;
	o = python_offsets_for((unsigned)atoi(argv[1]), (unsigned)atoi(argv[2]));
	if (!o)
		return 1;
	P(major);
	P(minor);
	P(runtime_tstate_current);
	P(runtime_finalizing);
	P(runtime_interp_main);
	P(tstate_cframe);
	P(cframe_current_frame);
	P(frame_code);
	P(frame_previous);
	P(frame_prev_instr);
	P(frame_is_entry);
	P(code_firstlineno);
	P(code_filename);
	P(code_name);
	P(code_qualname);
	P(code_linetable);
	P(code_adaptive);
	P(ob_type);
	P(type_name);
	P(str_length);
	P(str_state);
	P(str_ascii_data);
	P(str_compact_data);
	P(type_flags);
	P(gc_head);
	P(flag_managed_dict);
	P(flag_have_gc);
	P(dict_keys);
	P(dict_values);
	P(list_items);
	P(bytearray_bytes);
	P(set_table);
	P(set_smalltable);
	P(var_size);
	P(dict_used);
	P(set_used);
	P(long_digits);
	P(float_value);
	P(bytes_data);
	P(tstate_interp);
	P(dicts_free);
	P(dicts_nfree);
	P(lists_free);
	P(lists_nfree);
	P(tuples_free);
	P(tuples_nfree);
	P(tuple_lists);
	P(tuple_items);
	P(tuples_max);
	P(floats_nfree);
	P(floats_free);
	P(floats_max);
	P(type_dealloc);
	P(type_free);
	return 0;
}
