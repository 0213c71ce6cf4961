/*
 * Source lines and inlined functions read from DWARF directly, in batches:
 * each compilation unit is decoded once for all the addresses in it,
 * instead of libbfd's whole-file reading per address.  The answers are
 * libbfd's (bfd_find_nearest_line, then bfd_find_inliner_info), quirks
 * included, so that dmprof's output does not depend on which reader ran;
 * where this reader cannot be sure of that (forms it does not read,
 * overlapping units, sequences out of order...), it declines the whole
 * file and the caller asks libbfd.
 */
#ifndef DMPROF_SYMDWARF_H
#define DMPROF_SYMDWARF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elfimage.h"

/* One logical frame as libbfd gives it: names are the DWARF's (or the
 * symbol table's) own, mangled; NULL when unknown. */
struct dwarf_frame {
	const char *func;
	const char *file;
	uint32_t line;
};

/*
 * What libbfd answers for an address: NFRAMES frames, innermost first
 * (bfd_find_nearest_line's, then each bfd_find_inliner_info's), or 0
 * frames when it gives no file or no line.
 */
struct dwarf_answer {
	uint64_t addr;
	uint32_t nframes;
	const struct dwarf_frame *frames; /* valid while the reader is */
};

struct dwarf;

/*
 * The reader of IMG's DWARF (IMG stays open while the reader is), or
 * NULL when IMG has none this reader takes; WHY says why (for -v).
 */
struct dwarf *dwarf_open(const struct elf_image *img, const char **why);
/*
 * The same in two steps, for a caller with work of its own meanwhile:
 * dwarf_begin starts reading (.debug_info inflating on another core,
 * where there are two), dwarf_finish waits for it and returns what
 * dwarf_open would.  A reader begun is finished or closed.
 */
struct dwarf *dwarf_begin(const struct elf_image *img);
struct dwarf *dwarf_finish(struct dwarf *d, const char **why);
/*
 * Answer the N addresses of ADDRS (link-time addresses of the calls, not
 * the return addresses), in this order: libbfd's answers depend on the
 * questions asked before.  Returns 0, or -1 (with WHY set) when the file
 * holds something this reader does not follow: from then on it answers
 * nothing, and the caller asks libbfd about this file instead; or -2
 * when the file is built to make a reader work without bound (libbfd
 * would crash or hang on it): its DWARF is not to be read at all.
 */
int dwarf_lookup(struct dwarf *d, const uint64_t *addrs, size_t n,
		 struct dwarf_answer *out, const char **why);
/*
 * The same, for a caller that reads the answers in order as they come:
 * dwarf_lookup_start returns once the part that may decline the file is
 * done (as dwarf_lookup would), with each OUT[i].addr set; the answers
 * are then made on another core where there are two.  dwarf_answer
 * gives OUT[I] once it is answered (it waits); dwarf_lookup_wait waits
 * for them all, and comes before OUT is freed (dwarf_close waits too).
 */
int dwarf_lookup_start(struct dwarf *d, const uint64_t *addrs, size_t n,
		       struct dwarf_answer *out, const char **why);
const struct dwarf_answer *dwarf_answer(struct dwarf *d, size_t i);
void dwarf_lookup_wait(struct dwarf *d);
void dwarf_close(struct dwarf *d);

#endif
