/*
 * The in-memory model that every reader fills: interned strings, frames,
 * stacks and buckets of one profiled process.  Deep dumps, gperftools
 * profiles and the recorder's dumps all end up here.
 */
#ifndef DMPROF_MODEL_H
#define DMPROF_MODEL_H

#include "arena.h"
#include "bucket.h"
#include "stack.h"
#include "strtab.h"

struct model {
	struct arena arena;
	struct arena string_arena; /* the strings' own (see strtab_share) */
	struct strtab strings;
	struct frame_table frames;
	struct stack_table stacks;
	struct bucket_set buckets;
	/* (stack, kind) -> bucket index + 1, for formats without bucket
	 * ids: by stack id, the malloc bucket then the mmap one. */
	uint32_t *anon;
	size_t nanon;
	/* Where each bucket a producer numbered was defined, by index: for
	 * the word on a redefinition (a bucket made of a stack has no
	 * number of its own and is never defined twice: none kept).  A
	 * place is a file, + 1 in PLACE_FILES (0: none), and a line. */
	struct { uint32_t file, line; } *places;
	size_t nplaces;
	const char **place_files;
	size_t nplace_files, place_files_alloc;
	bool anon_stale;     /* gone with model_trim, to be built again */
	/* Frames and buckets before these are symbolized. */
	size_t frames_done, buckets_done;
	size_t typed;        /* buckets with a type (struct bucket_type) */
	/* The binaries frames are in (see model_binary); [0] unused. */
	const char **bins;
	size_t nbins, bins_alloc;
	uint32_t main_bin;  /* the executable's, or 0 */
	/* An interpreter's binary, whose frames stand for the runtime the
	 * program's interpreted frames run on (see model_note_runtime), or
	 * 0. */
	uint32_t runtime_bin;
	const char *runtime; /* its language ("python", "node"), or NULL */
	/* Frames a profile named itself (see model_named_frame). */
	struct hashmap named;
	uint64_t next_synthetic;
	/* "", interned: the type name of model_stack_bucket's buckets. */
	const char *empty;
};

void model_init(struct model *m);
void model_free(struct model *m);
/*
 * No more frames or stacks are expected: the tables that find them by
 * content go (tens of MB for a million stacks), to be built again if
 * some come after all.
 */
void model_trim(struct model *m);

/* About N more buckets (and stacks) are coming: room made for them at
 * once; BY_STACK where model_stack_bucket will make them (its map of
 * stacks to buckets made ready too). */
void model_expect_buckets(struct model *m, size_t n, bool by_stack);

/*
 * Define (or redefine: the later definition wins, as in the original) the
 * bucket ID, whose stack is FRAMES (addresses, innermost first); SOURCE
 * and LINE say where it was defined.  NULL after an error (an id table is
 * full).
 */
struct bucket *model_define_bucket(struct model *m, uint64_t id,
				   enum alloc_kind kind, bool has_typeinfo,
				   uint64_t typeinfo, const char *type_name,
				   const uint64_t *frames, uint32_t depth,
				   const char *source, unsigned long line);
/* The same with the stack interned, and TYPE_NAME and SOURCE interned in
 * the model's strings. */
struct bucket *model_define_stack_bucket(struct model *m, uint64_t id,
					 enum alloc_kind kind,
					 bool has_typeinfo, uint64_t typeinfo,
					 const char *type_name,
					 const struct stack *stack,
					 const char *source, unsigned long line);

struct bucket_place {
	const char *source; /* the file (interned); NULL: not kept */
	unsigned long line;
};
/* Where bucket B was defined (by model_define_bucket or
 * model_define_stack_bucket), or a place of NULL. */
struct bucket_place model_bucket_place(const struct model *m,
				       const struct bucket *b);

/*
 * The stack of FRAMES (addresses, innermost first), interned; NULL after
 * an error (more than 2^32 distinct frames or stacks).
 */
const struct stack *model_intern_stack(struct model *m,
				       const uint64_t *frames, uint32_t depth);
/* The same, of frame ids IDS whose stacks_hash is HASH. */
const struct stack *model_intern_stack_ids(struct model *m,
					   const uint32_t *ids, uint32_t depth,
					   uint64_t hash);

/*
 * The bucket of an allocation site in formats without bucket ids
 * (gperftools profiles): one per distinct (stack, kind), ids given in
 * order of first appearance from 1.  NULL after an error.
 */
struct bucket *model_intern_bucket(struct model *m, enum alloc_kind kind,
				   const uint64_t *frames, uint32_t depth,
				   const char *source, unsigned long line);

/*
 * Give bucket B the type a reader knows by name: SYM (interned in M), a
 * class's std::type_info at TYPEINFO (0: none, a layout's name).  It is
 * not symbolized again.
 */
void model_bucket_type(struct model *m, struct bucket *b, uint64_t typeinfo,
		       const char *sym);

/* The same for a stack interned already. */
struct bucket *model_stack_bucket(struct model *m, enum alloc_kind kind,
				  const struct stack *stack,
				  const char *source, unsigned long line);
/*
 * The buckets model_stack_bucket made from the N-th on, gone (their
 * stacks' slots empty again), in a model whose buckets are numbered by
 * it alone (false, and nothing gone, in any other).
 */
bool model_drop_stack_buckets(struct model *m, size_t n);

/*
 * Where the model stands, to go back to if a reader that interns as it
 * reads fails half-way: the frames and stacks of the failed file go (so
 * that nothing symbolizes or counts them), as do the frames it named.
 * Only before the reader makes buckets of its stacks.
 */
struct model_mark {
	size_t frames, stacks;
	uint64_t next_synthetic;
};
void model_mark(const struct model *m, struct model_mark *mark);
void model_rollback(struct model *m, const struct model_mark *mark);

/*
 * A logical frame that a profile names itself (pprof protobuf, DHAT, the
 * comments of Go's debug=1 profiles): a function, its source file (NULL
 * when unknown) and line (0 when unknown).
 */
struct frame_name {
	const char *func;
	size_t func_len;
	const char *file;
	size_t file_len;
	uint32_t line;
};

/*
 * The frame of code address ADDR as the profile names it: N logical
 * frames, innermost first, the last being the function that holds ADDR
 * (the ones before it were inlined there).  The frame is symbolized as
 * that and never looked up in a binary.  A frame of ADDR that is named
 * otherwise already (or ADDR 0: the profile gave no address) gets an
 * address of its own, above every user-space address.  Returns the
 * address to put in stacks.
 */
uint64_t model_named_frame(struct model *m, uint64_t addr,
			   const struct frame_name *names, uint32_t n);

/*
 * What a dump says of the runtime its stacks run on (META "Runtime:
 * python 3.11.2 /usr/bin/python3.11", dmprof record's): the binary that
 * holds the interpreter, into M (once).
 */
struct snapshot;
void model_note_runtime(struct model *m, const struct snapshot *snap);

/*
 * The number of the binary at PATH (interned: compared by pointer), new
 * if unseen, for struct frame's bin; its path is m->bins[N].
 */
uint32_t model_binary(struct model *m, const char *path);

#endif
