/*
 * Stack capture for the recorder: a DWARF call-frame unwinder for x86-64
 * that remembers, per code address, how to step to the caller.
 *
 * Stepping a frame means knowing where its caller's stack pointer (the
 * CFA), return address and frame pointer are.  For ordinary code that is
 * "CFA = RSP or RBP + n, return address at CFA - 8, RBP saved at CFA + m
 * or untouched", which the .eh_frame CFI says and which, once worked out
 * for a code address, never changes.  So each address is worked out once
 * (found through glibc's _dl_find_object and the binary-search table of
 * .eh_frame_hdr, then the CIE and FDE programs run up to it) and the rule
 * kept in a lock-free table; after that a frame costs a table probe and
 * two loads, several times less than libgcc's unwinder, which redoes the
 * work every time.
 *
 * Code with no CFI at all (a JIT's, V8's and the JVM's, which keep frame
 * pointers in it; the builtins V8 embeds in node's binary) is stepped
 * along the frame-pointer chain: CFA = RBP + 16, the return address at
 * CFA - 8, the caller's RBP at CFA - 16, checked as it goes (see walk()),
 * the walk ending where the chain breaks.  Anything else (signal frames,
 * CFA expressions, registers saved in other registers) makes the whole
 * capture fall back to glibc's backtrace(), so stacks are never wrong,
 * only sometimes slower.
 */
#include "leb128.h"
#include "rec.h"
#include "search.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * glibc's backtrace(), from the frame RET (rec_unwind's return address,
 * or the frame rec_unwind_from was given: what comes before it is this
 * call, and whatever wraps backtrace()), without the frames in [SKIP_LO,
 * SKIP_HI).
 */
static unsigned from_backtrace(uintptr_t *frames, unsigned max,
			       uintptr_t skip_lo, uintptr_t skip_hi,
			       uintptr_t ret)
{
	void *buf[REC_MAX_DEPTH + 16];
	int got = backtrace(buf, (int)max + 16), i = 0;
	unsigned n = 0;

	while (i < got && (uintptr_t)buf[i] != ret)
		i++;
	if (i == got)
		i = 1;
	for (; i < got && n < max; i++)
		if ((uintptr_t)buf[i] < skip_lo || (uintptr_t)buf[i] >= skip_hi)
			frames[n++] = (uintptr_t)buf[i];
	return n;
}

/* (_dl_find_object is glibc 2.35's; DLFO_EH_SEGMENT_TYPE comes with it.) */
#if defined(__x86_64__) && defined(DLFO_EH_SEGMENT_TYPE)

/* DWARF register numbers on x86-64. */
#define R_RBP 6
#define R_RSP 7
#define R_RA 16

/* A packed rule: how to step from a code address to its caller. */
#define RULE_VALID (1ULL << 63)
#define RULE_SLOW (1ULL << 62)     /* not for us: fall back */
#define RULE_END (1ULL << 61)      /* outermost frame */
#define RULE_CFA_RBP (1ULL << 60)  /* CFA = RBP + off, else RSP + off */
#define RULE_BP_SAVED (1ULL << 59) /* RBP saved at CFA + bp_off */
#define RULE_FP (1ULL << 58)       /* the frame-pointer chain: no CFI */
#define RULE_NOTCODE (1ULL << 57)  /* (with END) not code: no frame */

struct rule {
	int32_t cfa_off;
	int16_t bp_off, ra_off;
	uint64_t flags;
};

static uint64_t pack(const struct rule *r)
{
	return r->flags | RULE_VALID | (uint64_t)(uint32_t)r->cfa_off |
	       (uint64_t)(uint16_t)r->bp_off << 32 |
	       (uint64_t)(uint8_t)(int8_t)(r->ra_off / 8) << 48;
}

static void unpack(uint64_t v, struct rule *r)
{
	r->cfa_off = (int32_t)(uint32_t)v;
	r->bp_off = (int16_t)(uint16_t)(v >> 32);
	r->ra_off = (int16_t)((int8_t)(uint8_t)(v >> 48) * 8);
	r->flags = v & (RULE_SLOW | RULE_END | RULE_CFA_RBP | RULE_BP_SAVED |
			RULE_FP | RULE_NOTCODE);
}

/* ---- reading .eh_frame ---- */

static uint64_t fixed(struct byte_cur *c, size_t n)
{
	uint64_t v = 0;

	if ((size_t)(c->end - c->p) < n) {
		c->bad = true;
		return 0;
	}
	memcpy(&v, c->p, n); /* little-endian */
	c->p += n;
	return v;
}

/* A pointer in encoding ENC (DW_EH_PE_*); DATA for datarel. */
static uintptr_t encoded(struct byte_cur *c, uint8_t enc, uintptr_t data)
{
	const uint8_t *at = c->p;
	uint64_t v;

	if (enc == 0xff) /* omit */
		return 0;
	switch (enc & 0x0f) {
	case 0x00: v = fixed(c, 8); break;                    /* absptr */
	case 0x01: v = leb128_u(c); break;
	case 0x02: v = fixed(c, 2); break;
	case 0x03: v = fixed(c, 4); break;
	case 0x04: v = fixed(c, 8); break;
	case 0x09: v = (uint64_t)leb128_s(c); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)fixed(c, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)fixed(c, 4); break;
	case 0x0c: v = fixed(c, 8); break;
	default:
		c->bad = true;
		return 0;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += (uintptr_t)at; break;  /* pcrel */
	case 0x30: v += data; break;           /* datarel */
	default:
		c->bad = true;
		return 0;
	}
	if (enc & 0x80) /* indirect: only personality pointers, skipped */
		c->bad = c->bad || !v;
	return (uintptr_t)v;
}

/* The FDE for PC through .eh_frame_hdr's table; NULL if none (and
 * *USABLE false if the table is not one this can read). */
static const uint8_t *find_fde(const uint8_t *hdr, uintptr_t pc, bool *usable)
{
	struct byte_cur c = { hdr, hdr + 12, false };
	uint8_t enc_ptr, enc_count, enc_table;
	uint64_t count;
	size_t k;
	const int32_t *table;

	*usable = false;
	if (fixed(&c, 1) != 1)
		return NULL;
	enc_ptr = (uint8_t)fixed(&c, 1);
	enc_count = (uint8_t)fixed(&c, 1);
	enc_table = (uint8_t)fixed(&c, 1);
	c.end = hdr + 24;
	encoded(&c, enc_ptr, (uintptr_t)hdr);
	count = encoded(&c, enc_count, (uintptr_t)hdr);
	/* What every toolchain writes: datarel sdata4 pairs. */
	if (c.bad || enc_table != 0x3b)
		return NULL;
	*usable = true;
	if (!count)
		return NULL;
	table = (const int32_t *)(const void *)c.p;
	/* The last entry that starts at or before PC. */
	k = PARTITION_POINT(count, i, (uintptr_t)hdr + table[2 * i] <= pc);
	if (!k)
		return NULL;
	return hdr + table[2 * (k - 1) + 1];
}

struct regstate {
	int64_t cfa_off;
	int cfa_reg;
	int bp_how, ra_how; /* 0 unchanged, 1 at CFA + off, 2 undefined */
	int64_t bp_off, ra_off;
};

struct cie {
	uint64_t caf;
	int64_t daf;
	uint8_t fde_enc;
	bool has_z, signal;
	const uint8_t *insns, *end;
};

static bool parse_cie(const uint8_t *p, struct cie *cie)
{
	struct byte_cur c = { p, p + 4, false };
	uint64_t len = fixed(&c, 4);
	const char *aug;
	uint8_t version;

	if (len == 0xffffffff || len < 8)
		return false;
	c.end = p + 4 + len;
	if (fixed(&c, 4) != 0) /* CIE id */
		return false;
	version = (uint8_t)fixed(&c, 1);
	aug = (const char *)c.p;
	while (c.p < c.end && *c.p)
		c.p++;
	c.p++;
	cie->caf = leb128_u(&c);
	cie->daf = leb128_s(&c);
	if (version == 1)
		fixed(&c, 1);
	else
		leb128_u(&c);
	cie->fde_enc = 0;
	cie->has_z = aug[0] == 'z';
	cie->signal = false;
	if (cie->has_z) {
		uint64_t alen = leb128_u(&c);
		const uint8_t *after = c.p + alen;

		for (const char *a = aug + 1; *a && !c.bad; a++) {
			switch (*a) {
			case 'R':
				cie->fde_enc = (uint8_t)fixed(&c, 1);
				break;
			case 'L':
				fixed(&c, 1);
				break;
			case 'P': {
				uint8_t e = (uint8_t)fixed(&c, 1);

				encoded(&c, e & 0x7f, 0);
				break;
			}
			case 'S':
				cie->signal = true;
				break;
			default:
				return false; /* unknown augmentation */
			}
		}
		c.p = after;
	} else if (aug[0]) {
		return false;
	}
	cie->insns = c.p;
	cie->end = c.end;
	return !c.bad && c.p <= c.end;
}

/* Run a CFA program up to PC; false for what this unwinder cannot do. */
static bool run_cfa(struct byte_cur *c, const struct cie *cie, uintptr_t loc,
		    uintptr_t pc, struct regstate *rs,
		    const struct regstate *initial)
{
	struct regstate saved[8];
	int nsaved = 0;

	while (c->p < c->end && !c->bad) {
		uint8_t op = *c->p++;
		uint64_t reg, delta = 0;
		int64_t off;

		switch (op & 0xc0) {
		case 0x40: /* advance_loc */
			delta = op & 0x3f;
			goto advance;
		case 0x80: /* offset */
			reg = op & 0x3f;
			off = (int64_t)leb128_u(c) * cie->daf;
			goto offset;
		case 0xc0: /* restore */
			reg = op & 0x3f;
			goto restore;
		}
		switch (op) {
		case 0x00: /* nop */
			continue;
		case 0x01: /* set_loc */
			loc = encoded(c, cie->fde_enc, 0);
			if (loc > pc)
				return true;
			continue;
		case 0x02:
			delta = fixed(c, 1);
			goto advance;
		case 0x03:
			delta = fixed(c, 2);
			goto advance;
		case 0x04:
			delta = fixed(c, 4);
			goto advance;
		case 0x05: /* offset_extended */
			reg = leb128_u(c);
			off = (int64_t)leb128_u(c) * cie->daf;
			goto offset;
		case 0x06: /* restore_extended */
			reg = leb128_u(c);
			goto restore;
		case 0x07: /* undefined */
			reg = leb128_u(c);
			if (reg == R_RA)
				rs->ra_how = 2;
			else if (reg == R_RBP)
				rs->bp_how = 2;
			continue;
		case 0x08: /* same_value */
			reg = leb128_u(c);
			if (reg == R_RBP)
				rs->bp_how = 0;
			else if (reg == R_RA)
				return false;
			continue;
		case 0x09: /* register */
			reg = leb128_u(c);
			leb128_u(c);
			if (reg == R_RBP || reg == R_RA)
				return false;
			continue;
		case 0x0a: /* remember_state */
			if (nsaved == 8)
				return false;
			saved[nsaved++] = *rs;
			continue;
		case 0x0b: /* restore_state (the CFA rule too, as GCC means) */
			if (!nsaved)
				return false;
			*rs = saved[--nsaved];
			continue;
		case 0x0c: /* def_cfa */
			rs->cfa_reg = (int)leb128_u(c);
			rs->cfa_off = (int64_t)leb128_u(c);
			continue;
		case 0x0d: /* def_cfa_register */
			rs->cfa_reg = (int)leb128_u(c);
			continue;
		case 0x0e: /* def_cfa_offset */
			rs->cfa_off = (int64_t)leb128_u(c);
			continue;
		case 0x0f: /* def_cfa_expression */
			return false;
		case 0x10: /* expression */
		case 0x16: /* val_expression */
			reg = leb128_u(c);
			if (reg == R_RBP || reg == R_RA)
				return false;
			c->p += leb128_u(c);
			continue;
		case 0x11: /* offset_extended_sf */
			reg = leb128_u(c);
			off = leb128_s(c) * cie->daf;
			goto offset;
		case 0x12: /* def_cfa_sf */
			rs->cfa_reg = (int)leb128_u(c);
			rs->cfa_off = leb128_s(c) * cie->daf;
			continue;
		case 0x13: /* def_cfa_offset_sf */
			rs->cfa_off = leb128_s(c) * cie->daf;
			continue;
		case 0x14: /* val_offset */
		case 0x15: /* val_offset_sf */
			reg = leb128_u(c);
			if (op == 0x14)
				leb128_u(c);
			else
				leb128_s(c);
			if (reg == R_RBP || reg == R_RA)
				return false;
			continue;
		case 0x2e: /* GNU_args_size */
			leb128_u(c);
			continue;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = leb128_u(c);
			off = -(int64_t)leb128_u(c) * cie->daf;
			goto offset;
		default:
			return false;
		}
advance:
		loc += delta * cie->caf;
		if (loc > pc)
			return true;
		continue;
offset:
		if (reg == R_RBP) {
			rs->bp_how = 1;
			rs->bp_off = off;
		} else if (reg == R_RA) {
			rs->ra_how = 1;
			rs->ra_off = off;
		}
		continue;
restore:
		if (!initial)
			return false; /* (not in a CIE) */
		if (reg == R_RBP) {
			rs->bp_how = initial->bp_how;
			rs->bp_off = initial->bp_off;
		} else if (reg == R_RA) {
			rs->ra_how = initial->ra_how;
			rs->ra_off = initial->ra_off;
		}
		continue;
	}
	return !c->bad;
}

/*
 * libgcc's lookup of an FDE, which backtrace() makes: first among the
 * frames registered at run time (__register_frame, a JIT's), then in the
 * loaded objects.  NULL where libgcc is not loaded.
 */
struct fde_bases {
	void *tbase, *dbase, *func;
};
typedef const void *find_fde_fn(void *pc, struct fde_bases *bases);
static _Atomic(find_fde_fn *) libgcc_find_fde;

/*
 * Whether backtrace() can be called without loading libgcc: the program
 * had it (a C++ program, a JIT), or a fallback loaded it (link_now).
 */
static atomic_bool linked;
static void (*link_now)(void);

static bool find_libgcc(void)
{
	void *gcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);

	if (!gcc)
		return false;
	atomic_store(&libgcc_find_fde,
		     (find_fde_fn *)dlsym(gcc, "_Unwind_Find_FDE"));
	atomic_store(&linked, true);
	return true;
}

bool rec_unwind_ready(void (*link)(void))
{
	link_now = link;
	return find_libgcc();
}

/*
 * Is the return address PC the kernel's way back from a signal handler
 * (glibc's __restore_rt: mov $15, %rax; syscall)?  A walk that meets it
 * runs in a handler, where libgcc must not be loaded: the handler may
 * have interrupted the loader, or malloc.
 */
static bool sigreturn_at(uintptr_t pc)
{
	static const unsigned char code[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00,
					      0x00, 0x00, 0x0f, 0x05 };

	return pc && !memcmp((const void *)pc, code, sizeof(code));
}

/* ---- executable memory: where a frame pointer's return address goes ---- */

/*
 * In code without CFI, RBP is believed to be the frame pointer, which a
 * JIT's code keeps it as; other code (hand-written assembly) may keep
 * anything there.  So the return address a frame-pointer step reads counts
 * only where it points into executable memory, as /proc/self/maps says.
 * Its executable mappings are kept in a sorted table that a miss reads
 * again (new JIT code), under a sequence count: a reader that sees it
 * odd, or changed, reads the maps itself, as does a thread that finds
 * another (or the code its signal handler interrupted) making the table.
 * (Its accesses are sequentially consistent, with no fences, which
 * ThreadSanitizer does not follow: the count read after the table then
 * cannot miss a write the table read saw.)  Each code address is asked
 * about once, when its rule is worked out.
 */
#define EXEC_MAX 1024
static _Atomic uintptr_t exec_lo[EXEC_MAX], exec_hi[EXEC_MAX];
static atomic_uint exec_n, exec_seq;
static atomic_bool exec_making;

/* One line of the maps: its range, if executable. */
static bool exec_line(const char *p, const char *eol, uintptr_t *lo,
		      uintptr_t *hi)
{
	*lo = rec_hex(&p, eol, NULL);
	if (p >= eol || *p++ != '-')
		return false;
	*hi = rec_hex(&p, eol, NULL);
	return eol - p >= 4 && p[0] == ' ' && p[3] == 'x' && *lo < *hi;
}

/* Add [LO, HI) to the table being made, which has *N ranges. */
static void exec_add(unsigned *n, uintptr_t lo, uintptr_t hi)
{
	if (*n && atomic_load(&exec_hi[*n - 1]) == lo) {
		atomic_store(&exec_hi[*n - 1], hi);
	} else if (*n < EXEC_MAX) {
		atomic_store(&exec_lo[*n], lo);
		atomic_store(&exec_hi[*n], hi);
		++*n;
	}
}

/* Is PC in an executable mapping, as the maps say now?  With MAKE, the
 * table is made again from them (the caller holds EXEC_MAKING). */
static bool exec_read(uintptr_t pc, bool make)
{
	char buf[1024]; /* (a hook's stack may be a signal's, small) */
	size_t have = 0;
	unsigned n = 0, seq = 0;
	bool found = false, skipping = false;
	int saved = errno, fd = rec_raw_open("/proc/self/maps",
					     O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		errno = saved;
		return true; /* (no /proc: the stack's bounds must do) */
	}
	if (make) {
		seq = atomic_load(&exec_seq);
		atomic_store(&exec_seq, seq + 1);
	}
	for (;;) {
		long got = rec_raw_read(fd, buf + have, sizeof(buf) - have);
		const char *p = buf, *end, *eol;
		uintptr_t lo, hi;

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		end = buf + have + got;
		while (p < end) {
			eol = memchr(p, '\n', (size_t)(end - p));
			/* (The rest of the line comes with the next read, but
			 * for a line longer than the buffer: its start is all
			 * that counts.) */
			if (!eol && (p > buf || end < buf + sizeof(buf)))
				break;
			if (!skipping && exec_line(p, eol ? eol : end, &lo, &hi)) {
				found |= pc >= lo && pc < hi;
				if (make)
					exec_add(&n, lo, hi);
			}
			skipping = !eol;
			p = eol ? eol + 1 : end;
		}
		have = (size_t)(end - p);
		memmove(buf, p, have);
	}
	rec_raw_close(fd);
	if (make) {
		atomic_store(&exec_n, n);
		atomic_store(&exec_seq, seq + 2);
	}
	errno = saved;
	return found;
}

/* 1: PC is in the table; 0: not; -1: the table is being made. */
static int exec_find(uintptr_t pc)
{
	unsigned seq = atomic_load(&exec_seq);
	unsigned n = atomic_load(&exec_n);
	size_t k;
	bool found;

	if (seq & 1)
		return -1;
	if (n > EXEC_MAX)
		n = EXEC_MAX;
	k = PARTITION_POINT(n, i, atomic_load(&exec_hi[i]) <= pc);
	found = k < n && atomic_load(&exec_lo[k]) <= pc;
	return atomic_load(&exec_seq) == seq ? found : -1;
}

static bool executable(uintptr_t pc)
{
	bool make, found;

	if (exec_find(pc) == 1)
		return true;
	make = !atomic_exchange(&exec_making, true);
	found = exec_read(pc, make);
	if (make)
		atomic_store(&exec_making, false);
	return found;
}

/* The rule of code at PC that has no CFI: a step along the frame-pointer
 * chain, if it is code at all. */
static uint64_t fp_rule(uintptr_t pc)
{
	struct rule r = { 16, -16, -8,
			  RULE_CFA_RBP | RULE_BP_SAVED | RULE_FP };

	if (!executable(pc))
		r = (struct rule){ 0, 0, 0, RULE_END | RULE_NOTCODE };
	return pack(&r);
}

/* Work out the rule for code address PC (a return address minus one, or
 * the exact address of the first frame). */
static uint64_t compute(uintptr_t pc)
{
	struct dl_find_object fo;
	const uint8_t *fde, *cie_p;
	struct cie cie;
	struct regstate rs, initial;
	struct rule r = { 0, 0, 0, RULE_SLOW };
	struct byte_cur c;
	uint64_t len;
	uintptr_t begin, range;
	bool usable;
	uint64_t v;

	if (_dl_find_object((void *)pc, &fo) != 0) {
		struct fde_bases bases;

		/*
		 * Code of no object: a JIT's (V8's, the JVM's), along its
		 * frame pointers, unless it registered CFI with libgcc,
		 * which backtrace() then follows.
		 */
		find_fde_fn *find = atomic_load_explicit(&libgcc_find_fde,
							 memory_order_relaxed);

		if (find && find((void *)pc, &bases))
			return pack(&r);
		v = fp_rule(pc);
		if (v & RULE_FP)
			atomic_store_explicit(&rec_unwind_jit, true,
					      memory_order_relaxed);
		return v;
	}
	/* (An object's code without CFI: V8's builtins in node's binary.) */
	if (!fo.dlfo_eh_frame)
		return fp_rule(pc);
	fde = find_fde(fo.dlfo_eh_frame, pc, &usable);
	if (!fde)
		return usable ? fp_rule(pc) : pack(&r);
	c = (struct byte_cur){ fde, fde + 8, false };
	len = fixed(&c, 4);
	if (len == 0xffffffff || len < 8)
		return pack(&r);
	c.end = fde + 4 + len;
	cie_p = c.p;
	cie_p -= (uint32_t)fixed(&c, 4); /* relative to the field itself */
	if (!parse_cie(cie_p, &cie) || cie.signal)
		return pack(&r);
	begin = encoded(&c, cie.fde_enc, 0);
	range = encoded(&c, cie.fde_enc & 0x0f, 0);
	if (c.bad)
		return pack(&r);
	if (pc < begin || pc >= begin + range)
		return fp_rule(pc); /* (between two functions' FDEs) */
	if (cie.has_z)
		c.p += leb128_u(&c);

	memset(&rs, 0, sizeof(rs));
	rs.cfa_reg = -1;
	{
		struct byte_cur ci = { cie.insns, cie.end, false };

		if (!run_cfa(&ci, &cie, 0, UINTPTR_MAX, &rs, NULL))
			return pack(&r);
	}
	initial = rs;
	if (!run_cfa(&c, &cie, begin, pc, &rs, &initial))
		return pack(&r);
	if (rs.ra_how == 2) {
		r.flags = RULE_END;
		return pack(&r);
	}
	if (rs.ra_how != 1 || (rs.cfa_reg != R_RSP && rs.cfa_reg != R_RBP) ||
	    rs.cfa_off < 0 || rs.cfa_off > INT32_MAX || rs.ra_off % 8 ||
	    rs.ra_off < -1024 || rs.ra_off > 1016 || rs.bp_off < INT16_MIN ||
	    rs.bp_off > INT16_MAX || rs.bp_how == 2)
		return pack(&r);
	r.flags = (rs.cfa_reg == R_RBP ? RULE_CFA_RBP : 0) |
		  (rs.bp_how == 1 ? RULE_BP_SAVED : 0);
	r.cfa_off = (int32_t)rs.cfa_off;
	r.bp_off = (int16_t)rs.bp_off;
	r.ra_off = (int16_t)rs.ra_off;
	return pack(&r);
}

/* ---- the cache: code address -> rule ---- */

/*
 * Open addressing, 8 probes.  The table starts at 4,096 entries (64 KiB)
 * and is made four times larger when half full or crowded, up to 65,536
 * (1 MiB): it is written through when made (reading memory never written
 * maps the zero page, which would muddle the committed bytes), and a
 * short process (gcc's as, under make) needs a few hundred rules, not a
 * MiB of page faults.  A table replaced stays (a walk may be probing it)
 * and is forgotten: its rules are worked out again in the new one.
 */
#define CACHE_BITS_FIRST 12
#define CACHE_BITS_MOST 16
#define PROBES 8

#define KEY_PC ((1ULL << 48) - 1)

struct entry {
	_Atomic uint64_t key;   /* address | generation << 48 */
	_Atomic uint64_t value; /* 0 while being written */
};

struct rules {
	unsigned bits;
	atomic_uint filled;
	struct entry e[];
};

static struct rules *_Atomic cache;
static atomic_bool growing;
atomic_ulong rec_unwind_fallbacks, rec_unwind_cut;
atomic_bool rec_unwind_jit;
atomic_uint rec_unwind_computed;
static atomic_uint_fast64_t generation;

static struct rules *rules_new(unsigned bits)
{
	size_t size = sizeof(struct rules) + ((size_t)1 << bits) *
						  sizeof(struct entry);
	struct rules *t = rec_alloc(size);

	if (t) {
		memset(t, 0, size); /* touched */
		t->bits = bits;
	}
	return t;
}

/* Keep rule V for PC in T, where a probe finds room: false if none. */
static bool rule_put(struct rules *t, uintptr_t pc, uint64_t key, uint64_t v)
{
	uint64_t h = (uint64_t)pc * 0x9e3779b97f4a7c15ULL;
	size_t mask = ((size_t)1 << t->bits) - 1;
	size_t i = (size_t)(h >> (64 - t->bits));

	for (int k = 0; k < PROBES; k++, i = (i + 1) & mask) {
		uint64_t have = 0;

		if (atomic_compare_exchange_strong(&t->e[i].key, &have, key)) {
			atomic_store_explicit(&t->e[i].value, v,
					      memory_order_release);
			atomic_fetch_add(&t->filled, 1);
			return true;
		}
		if (have == key)
			return false;
	}
	return false;
}

/*
 * The rules of FROM into TO, a table not yet in use: what a short process
 * worked out before its table grew is not worked out again (cc1 of a
 * small file: a third of its rules).  A rule FROM gets meanwhile, from
 * another thread, is only worked out again later.
 */
static void rules_move(const struct rules *from, struct rules *to)
{
	uint64_t gen = atomic_load(&generation) << 48;

	for (size_t i = 0; i < (size_t)1 << from->bits; i++) {
		uint64_t key = atomic_load_explicit(&from->e[i].key,
						    memory_order_acquire);
		uint64_t v = atomic_load_explicit(&from->e[i].value,
						  memory_order_acquire);

		if (v && key && (key & ~KEY_PC) == gen)
			rule_put(to, (uintptr_t)(key & KEY_PC), key, v);
	}
}

/* T, half full or crowded, replaced by a table four times its size. */
static void rules_grow(struct rules *t)
{
	struct rules *n;

	if (t->bits >= CACHE_BITS_MOST || atomic_exchange(&growing, true))
		return;
	if (atomic_load(&cache) == t && (n = rules_new(t->bits + 2))) {
		rules_move(t, n);
		atomic_store_explicit(&cache, n, memory_order_release);
	}
	atomic_store(&growing, false);
}

size_t rec_unwind_cache_size(void)
{
	struct rules *t = atomic_load(&cache);

	return t ? (size_t)1 << t->bits : 0;
}

static uint64_t rule_key(uintptr_t pc)
{
	uint64_t gen = atomic_load_explicit(&generation, memory_order_acquire);

	return (uint64_t)pc | gen << 48;
}

/* ---- for rec_unwind_saved.c: rules kept across processes ---- */

void rec_unwind_reserve(size_t n)
{
	struct rules *t = atomic_load(&cache), *bigger;
	unsigned bits = CACHE_BITS_FIRST;

	while (bits < CACHE_BITS_MOST && ((size_t)1 << bits) < 4 * n)
		bits++;
	if (!t || t->bits >= bits || !(bigger = rules_new(bits)))
		return;
	rules_move(t, bigger);
	atomic_store_explicit(&cache, bigger, memory_order_release);
}

bool rec_unwind_put(uintptr_t pc, uint64_t rule)
{
	struct rules *t = atomic_load_explicit(&cache, memory_order_acquire);

	/* (A value as pack() makes them: no bit it does not use.) */
	if (!t || pc > KEY_PC || !(rule & RULE_VALID) || rule & (1ULL << 56))
		return false;
	return rule_put(t, pc, rule_key(pc), rule);
}

void rec_unwind_each(void (*fn)(uintptr_t pc, uint64_t rule, void *arg),
		     void *arg)
{
	struct rules *t = atomic_load_explicit(&cache, memory_order_acquire);
	uint64_t gen = atomic_load(&generation) << 48;

	for (size_t i = 0; t && i < (size_t)1 << t->bits; i++) {
		uint64_t key = atomic_load_explicit(&t->e[i].key,
						    memory_order_acquire);
		uint64_t v = atomic_load_explicit(&t->e[i].value,
						  memory_order_acquire);

		if (v && key && (key & ~KEY_PC) == gen)
			fn((uintptr_t)(key & KEY_PC), v, arg);
	}
}

static uint64_t rule_for(uintptr_t pc)
{
	struct rules *t = atomic_load_explicit(&cache, memory_order_acquire);
	uint64_t key = rule_key(pc);
	uint64_t h = (uint64_t)pc * 0x9e3779b97f4a7c15ULL;
	size_t mask = ((size_t)1 << t->bits) - 1;
	size_t i = (size_t)(h >> (64 - t->bits));
	uint64_t v;

	for (int k = 0; k < PROBES; k++, i = (i + 1) & mask) {
		struct entry *e = &t->e[i];
		uint64_t have = atomic_load_explicit(&e->key,
						     memory_order_acquire);

		if (have == key) {
			v = atomic_load_explicit(&e->value,
						 memory_order_acquire);
			return v ? v : compute(pc);
		}
		if (have)
			continue;
		/* An empty slot: work the rule out and keep it. */
		v = compute(pc);
		atomic_fetch_add_explicit(&rec_unwind_computed, 1,
					  memory_order_relaxed);
		if (atomic_compare_exchange_strong(&e->key, &have, key)) {
			atomic_store_explicit(&e->value, v,
					      memory_order_release);
			if (atomic_fetch_add(&t->filled, 1) + 1 == (mask + 1) / 2)
				rules_grow(t);
		}
		return v;
	}
	rules_grow(t);
	return compute(pc); /* a crowded neighbourhood: no caching */
}

void rec_unwind_forget(void)
{
	/* Libraries go away with dlclose(): their rules with them, and
	 * their code from the table of executable memory. */
	if (!atomic_exchange(&exec_making, true)) {
		unsigned seq = atomic_load(&exec_seq);

		atomic_store(&exec_seq, seq + 1);
		atomic_store(&exec_n, 0);
		atomic_store(&exec_seq, seq + 2);
		atomic_store(&exec_making, false);
	}
	atomic_fetch_add(&generation, 1);
	{
		struct rules *t = atomic_load(&cache);

		for (size_t i = 0; t && i < (size_t)1 << t->bits; i++) {
			atomic_store_explicit(&t->e[i].key, 0,
					      memory_order_relaxed);
			atomic_store_explicit(&t->e[i].value, 0,
					      memory_order_relaxed);
		}
		if (t)
			atomic_store(&t->filled, 0);
	}
}

/* Stacks grow down; a step that goes the wrong way is a broken stack. */
#define MAX_FRAME (64u << 20)

/*
 * The top of this thread's stack: no read of the unwinder goes past it,
 * so that even a rule gone stale (code unloaded behind our back, as
 * glibc's own iconv modules are) cannot read outside the stack.  The main
 * thread's top is the page of __libc_stack_end (glibc's own lookup of it
 * reads /proc/self/maps through stdio, which a hook must not do).  Another
 * thread's descriptor sits at the top of its stack mapping, above its
 * static TLS and every frame, so pthread_self() bounds it.  Not
 * pthread_getattr_np(): it mallocs holding the thread's lock, so a thread
 * that calls it first thing (Rust's std does) would wait on itself here.
 */
extern void *__libc_stack_end;
static __thread uintptr_t stack_top;

static uintptr_t find_stack_top(void)
{
	if (syscall(SYS_gettid) == getpid())
		return ((uintptr_t)__libc_stack_end | 4095) + 1;
	return (uintptr_t)pthread_self();
}

/* ---- the memo: each thread's steps lately taken ---- */

/*
 * Most allocations come from where an earlier one of the thread came
 * from, or from near it: a loop calls the same functions again, and the
 * frames towards the stack's root are those of the last time.  So each
 * thread keeps the steps its walks took, each from a frame (its code
 * address and stack pointer) to its caller's, linked to the step taken
 * next from there: a tree of its stacks, from their innermost frames to
 * the root.  A walk that comes to a frame a step was taken from need not
 * step: from there each step reads one word of the stack (the return
 * address) at a place that follows from the frame, so if that word
 * still holds what it held, the step goes as it went, to the same
 * caller's frame.  Checking a word is a load and a compare, where a step
 * is a rule lookup and a dozen checks.  The rules themselves must not
 * have changed: the steps are kept for one generation of the rule cache.
 * Any frame a step was taken from is found (a hash of the frames), not
 * only the last walks' ones: sqlite3's allocations come by so many paths
 * that a walk met its last walks only seven frames up; it meets this at
 * its first frame.
 *
 * RBP is the frame pointer only where a rule says so (CFA = RBP + n);
 * elsewhere it holds whatever the code keeps in it, a loop's counter
 * maybe, which differs from one call to the next.  So a frame's RBP
 * counts only at a step that takes its CFA from it: there it must be what
 * it was.  A walk that replays steps follows RBP as the steps restore it,
 * reading the stack words they restore it from.
 *
 * Where a step's word has changed (the same function at the same depth,
 * called from elsewhere), the other step kept from that frame is tried
 * (two are kept from each: code that alternates between two callers), else
 * the walk steps from there again; the step before is linked to the one
 * taken.
 */
struct node {
	uintptr_t at, sp, bp;  /* the frame stepped from (BP: see STEP_RBP) */
	uintptr_t cfa, ra;     /* the caller's SP, and the word at CFA + RA_OFF */
	uint32_t up;           /* the step from the caller's frame: index + 1 */
	uint16_t tag, up_tag;  /* uses of the node; of UP's, when linked */
	int16_t ra_off, bp_off;
	uint8_t flags;         /* STEP_* */
	uint8_t keep;          /* RA is a frame of the stack */
	uint8_t root;          /* with UP 0: the stack ends after this step */
} __attribute__((aligned(64))); /* (a cache line each: the nodes are
				   read one after the other) */

#define STEP_RBP 1u   /* its CFA is RBP + n */
#define STEP_SAVED 2u /* it restores RBP from the stack (BP_OFF) */
#define STEP_FP 4u    /* along the frame pointers (code without CFI) */

/* Steps a thread keeps: NODES_FIRST at first, and more where they were
 * all used in fewer than GROW_WALKS walks each, up to NODES_MOST; but only
 * for a thread that walked LONG_WALKS times per node already (the pages
 * and the copy of a larger table cost a short process more than the steps
 * it saves: cc1 of a small file, 11,500 walks, 5% more time). */
#define NODES_FIRST 512 /* (both powers of two) */
#define NODES_MOST 4096

/* The hash has HASH_WAYS slots a node, in sets of as many, any of which
 * a node of the set may take: a frame that comes often is not pushed out
 * by two others that come now and then.  (A set: 16 bytes.) */
#define HASH_WAYS 4
#define GROW_WALKS 16
#define LONG_WALKS 256

/*
 * A walk's path: its steps' words in a row, kept with its first step, so
 * that a walk from there checks them all at once (loads that do not wait
 * for one another, where the nodes are read one after the other) and,
 * when none has changed, has its frames without a step.  Where a step
 * takes its CFA from RBP, RBP must be what it was there: the words RBP
 * was restored from on the way are checked too, and RBP at the start if
 * it comes from there (worked out from the steps' flags, from the root
 * down, when the path is kept).
 *
 *   word 0: steps K, the frames before the walk and its MAX (the words
 *           the same, so is how the walk ended: at the stack's root, or
 *           at MAX frames), how many RBP words NB, PATH_ROOT if at the
 *           root, and the frames it keeps (bits 40 to 47)
 *   word 1: which steps keep their frame (a bit each)
 *   word 2: which steps take their CFA from RBP
 *   word 3: which steps restore RBP from the stack
 *   word 4: which steps need RBP as it was, coming to them
 *   word 5: RBP at the start (for step 0, if it needs it)
 *   then K pairs: where the step read its return address (and, in the
 *   top 16 bits, the step's node, or NO_NODE), and what it read;
 *   then NB pairs: where a step restored RBP from that is needed (and
 *   the step, in the top 16 bits), and what it read
 *
 * A path gives the frames it gave when it was made, so the caller may
 * keep a note with it (the bucket of the stack), which a walk that
 * replays it gives back.  (PATHS paths are kept from each frame, the
 * last ones: a function that many callers call, from frames at the same
 * place on the stack.  sqlite3's malloc is called so: with two, 16% of
 * its walks found no path and stepped node by node, 1.66x -> 1.41x of
 * its time with four.)
 *
 * A walk that replays steps from node to node (each waits for the one
 * before to be read) goes on, at a node that is a step of a path, with
 * the rest of that path at once (a node knows the last path it is in,
 * and where).  Steps along the frame pointers (code of no CFI, a JIT's)
 * are in no path.
 */
#define PATH_WORDS_PER_NODE 16
#define PATH_ROOT (1ULL << 32)
#define PATH_HEAD 6
#define NO_NODE 0xffffULL /* (a step a path took from another) */
#define PATH_AT(w) ((const uintptr_t *)(uintptr_t)((w) & ((1ULL << 48) - 1)))
#define PATH_STEPS 64
#define PATHS 4

/*
 * The rules a thread's walks used lately, in front of the cache of every
 * rule (a megabyte: a lookup there is a miss of the processor's caches,
 * a sixth of the walk's time in sqlite3's): its keys as the cache's.
 */
#define NEAR_BITS 8
struct near {
	uint64_t key, value;
};

struct memo {
	struct rec_pooled pooled;   /* (first) */
	atomic_bool busy;           /* a walk is using it */
	uint64_t gen;               /* of the rules the steps used */
	uintptr_t skip_lo, skip_hi; /* (which made KEEP) */
	uint64_t walks;
	uint64_t wrapped;           /* WALKS when NEXT last came round */
	bool grow;                  /* the nodes came round too soon */
	struct node *nodes;
	uint32_t *hash;             /* by frame: node index + 1 */
	unsigned nnodes, next;      /* (the hash has 2 * NNODES slots) */
	/* Walks' paths (see struct path): a ring of PATH_WORDS_PER_NODE
	 * words a node, the words ever written, and each node's PATHS last
	 * paths, the last first (their places in all that was written, plus
	 * one; 0: none). */
	uint64_t *paths;
	size_t path_words;
	uint64_t path_end;
	uint64_t *path_of;
	uint64_t *in_path;          /* each node's last path: place + 1, and
				     * the step (low 8 bits); 0: none */
	void **notes;               /* the callers', of each node's paths */
	struct near near[1u << NEAR_BITS];
};

bool rec_unwind_no_memo;
__thread unsigned long rec_unwind_replays, rec_unwind_same, rec_unwind_paths;

static __thread struct memo *memo;
static __thread bool memo_making;
static struct rec_pool memos = { REC_LOCK_INIT, NULL, NULL };
static pthread_key_t memo_key;
static bool have_memo_key;

/* A thread ends: its memo goes to the next new thread. */
static void memo_retire(void *arg)
{
	struct memo *m = arg;

	if (memo == m)
		memo = NULL;
	rec_pool_put(&memos, m);
}

/*
 * A signal handler may walk in the middle of a walk of the code it
 * interrupted (a hook called from a handler does, in a thread that is
 * not in the hooks): it finds the memo busy and does without.  (The
 * fences keep the compiler from moving the flag past the walk's own
 * reads and writes of the memo.)
 */
static void memo_hold(struct memo *m)
{
	atomic_store_explicit(&m->busy, true, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}

static void memo_release(struct memo *m)
{
	atomic_signal_fence(memory_order_seq_cst);
	atomic_store_explicit(&m->busy, false, memory_order_relaxed);
}

/* No step is found any more (those kept are reused in turn). */
static void memo_clear(struct memo *m)
{
	if (m->hash)
		memset(m->hash, 0, HASH_WAYS * m->nnodes * sizeof(*m->hash));
}

void rec_unwind_locks(bool take)
{
	rec_pool_lock(&memos, take);
}

void rec_unwind_after_fork(void)
{
	/* Only this thread lives on: the others' memos are free. */
	rec_pool_after_fork(&memos, memo);
}

static inline size_t node_slot(const struct memo *m, uintptr_t at,
			       uintptr_t sp)
{
	return (size_t)(((at ^ sp * 0x9e3779b97f4a7c15ULL) *
			 0xbf58476d1ce4e5b9ULL) >> 40) & (HASH_WAYS * m->nnodes - 1);
}

/* Is X the step kept from the frame AT, SP, BP, its word as it was? */
static inline bool node_ok(const struct node *x, uintptr_t at, uintptr_t sp,
			   uintptr_t bp)
{
	return x->at == at && x->sp == sp &&
	       (!(x->flags & STEP_RBP) || x->bp == bp) &&
	       *(const uintptr_t *)(x->cfa + x->ra_off) == x->ra;
}

/* The step kept from the frame AT, SP, BP whose word is as it was, but
 * NOT; NULL if none.  (HASH_WAYS ways of the hash: the slot's set.) */
static inline struct node *node_find(const struct memo *m, uintptr_t at,
				     uintptr_t sp, uintptr_t bp,
				     const struct node *not)
{
	size_t set = node_slot(m, at, sp) & ~(size_t)(HASH_WAYS - 1);

	for (size_t h = set; h < set + HASH_WAYS; h++) {
		uint32_t i = m->hash[h];
		struct node *x = i ? &m->nodes[i - 1] : NULL;

		if (x && x != not && node_ok(x, at, sp, bp))
			return x;
	}
	return NULL;
}

/*
 * The node of UP, if it is still the one X was linked to.  A walk's new
 * steps are nodes in a row, so UP is most often the next node: guessed
 * so, a mispredicted branch costs less than waiting for UP's load to
 * know where the next node is, node after node (walks replay most of
 * their steps).
 */
static inline struct node *node_up(const struct memo *m, struct node *x)
{
	struct node *u = x + 1;

	if (__builtin_expect(u != m->nodes + m->nnodes &&
				     x->up == (uint32_t)(u - m->nodes) + 1,
			     1))
		return u->tag == x->up_tag ? u : NULL;
	u = x->up ? &m->nodes[x->up - 1] : NULL;
	return u && u->tag == x->up_tag ? u : NULL;
}

/* Node I into the hash: a free way of its set, else the way of the node
 * made longest ago. */
static void hash_put(struct memo *m, unsigned i)
{
	size_t set = node_slot(m, m->nodes[i].at, m->nodes[i].sp) &
		     ~(size_t)(HASH_WAYS - 1), pick = set;
	unsigned oldest = 0;

	for (size_t h = set; h < set + HASH_WAYS; h++) {
		unsigned age;

		if (!m->hash[h]) {
			pick = h;
			break;
		}
		/* (Nodes are made in turn from NEXT on: the age of one.) */
		age = (m->next + m->nnodes - m->hash[h]) & (m->nnodes - 1);
		if (age >= oldest) {
			oldest = age;
			pick = h;
		}
	}
	m->hash[pick] = i + 1;
}

/* Where X's paths and their notes start in M's path_of and notes. */
static inline size_t paths_of(const struct memo *m, const struct node *x)
{
	return PATHS * (size_t)(x - m->nodes);
}

/* The bytes of a memo's tables for NNODES nodes. */
static size_t tables_size(unsigned nnodes)
{
	return (size_t)nnodes * (sizeof(struct node) +
				 HASH_WAYS * sizeof(uint32_t) +
				 (1 + PATHS) * sizeof(uint64_t) +
				 PATHS * sizeof(void *) +
				 PATH_WORDS_PER_NODE * sizeof(uint64_t));
}

/*
 * M's tables for NNODES nodes, in one mapping: the nodes kept (copied
 * in, found again by the new hash), not the paths (their ring is another
 * size).  False without memory.
 */
static bool memo_size(struct memo *m, unsigned nnodes)
{
	char *p = rec_map_alloc(tables_size(nnodes));
	unsigned kept = m->nodes ? m->nnodes : 0;

	if (!p)
		return false;
	if (m->nodes) {
		memcpy(p, m->nodes, kept * sizeof(struct node));
		rec_map_free(m->nodes, tables_size(m->nnodes));
	}
	m->nodes = (struct node *)(void *)p;
	p += nnodes * sizeof(struct node);
	m->path_of = (uint64_t *)(void *)p;
	p += (size_t)PATHS * nnodes * sizeof(uint64_t);
	m->in_path = (uint64_t *)(void *)p;
	p += nnodes * sizeof(uint64_t);
	m->notes = (void **)(void *)p;
	p += (size_t)PATHS * nnodes * sizeof(void *);
	m->paths = (uint64_t *)(void *)p;
	m->path_words = (size_t)nnodes * PATH_WORDS_PER_NODE;
	p += m->path_words * sizeof(uint64_t);
	m->hash = (uint32_t *)(void *)p;
	m->path_end = 0;
	m->next = kept;
	m->nnodes = nnodes;
	/* (The new hash finds the nodes kept, the later ones of a set.) */
	for (unsigned i = 0; i < kept; i++)
		if (m->nodes[i].at || m->nodes[i].sp)
			hash_put(m, i);
	return true;
}

/* This thread's memo, not in use; NULL if there is none to have. */
static struct memo *memo_get(void)
{
	struct memo *m = memo;

	if (__builtin_expect(m != NULL, 1))
		/* (Busy: this is a signal handler's walk.) */
		return atomic_load_explicit(&m->busy, memory_order_relaxed) ||
				       rec_unwind_no_memo
			       ? NULL
			       : m;
	/* (Not in a signal handler that came while this thread made one.) */
	if (!have_memo_key || memo_making)
		return NULL;
	memo_making = true;
	atomic_signal_fence(memory_order_seq_cst);
	m = rec_pool_get(&memos, sizeof(*m));
	if (m && !m->nodes && !memo_size(m, NODES_FIRST))
		m = NULL; /* (its memory stays in the pool) */
	if (m) {
		/* (Another thread's stacks: maybe one that fork() left in
		 * the middle of a walk.) */
		memo_clear(m);
		atomic_store_explicit(&m->busy, false, memory_order_relaxed);
		/* (It may allocate: the hooks are off in a walk of theirs.) */
		pthread_setspecific(memo_key, m);
		atomic_signal_fence(memory_order_seq_cst);
		memo = m;
	}
	atomic_signal_fence(memory_order_seq_cst);
	memo_making = false;
	return m;
}

size_t rec_unwind_memo_nodes(void)
{
	return memo ? memo->nnodes : 0;
}

/* A node for a new step from the frame AT, SP (the one used longest
 * ago), found from now on. */
static struct node *node_new(struct memo *m, uintptr_t at, uintptr_t sp)
{
	unsigned i = m->next;
	struct node *x = &m->nodes[i];
	size_t h;
	uint16_t tag = (uint16_t)(x->tag + 1);

	if (++m->next == m->nnodes) {
		m->next = 0;
		if (m->walks - m->wrapped < GROW_WALKS * m->nnodes &&
		    m->walks >= LONG_WALKS * m->nnodes)
			m->grow = true;
		m->wrapped = m->walks;
	}
	if (x->at || x->sp) {
		h = node_slot(m, x->at, x->sp) & ~(size_t)(HASH_WAYS - 1);
		for (size_t k = h; k < h + HASH_WAYS; k++)
			if (m->hash[k] == i + 1)
				m->hash[k] = 0;
	}
	memset(x, 0, sizeof(*x));
	memset(&m->path_of[paths_of(m, x)], 0, PATHS * sizeof(uint64_t));
	memset(&m->notes[paths_of(m, x)], 0, PATHS * sizeof(void *));
	m->in_path[i] = 0;
	x->tag = tag;
	x->at = at;
	x->sp = sp;
	hash_put(m, i);
	return x;
}

/* X's step goes on with Y's. */
static inline void node_link(struct memo *m, struct node *x,
			     const struct node *y)
{
	x->up = (uint32_t)(y - m->nodes) + 1;
	x->up_tag = y->tag;
	x->root = 0;
}

/* The bits set in V (no popcnt instruction assumed: libgcc's costs a
 * call). */
static inline unsigned popcount(uint64_t v)
{
	unsigned n = 0;

	for (; v; v &= v - 1)
		n++;
	return n;
}

/* Do the NB pairs at P hold as they held, from step FROM on? */
static inline uint64_t pairs_diff(const uint64_t *p, unsigned nb,
				  unsigned from)
{
	uint64_t diff = 0;

	for (unsigned i = 0; i < nb; i++)
		if ((p[2 * i] >> 48) >= from)
			diff |= *PATH_AT(p[2 * i]) ^ p[2 * i + 1];
	return diff;
}

/* Is START's path WHICH (0: the last one, 1: the one before) the walk
 * from there now, with RBP at BP, every word of it as it was (and N and
 * MAX those of the walk that made it)?  Its words, or NULL. */
static inline __attribute__((always_inline)) const uint64_t *
path_check(const struct memo *m, const struct node *start, unsigned which,
	   uintptr_t bp, unsigned n, unsigned max)
{
	uint64_t at = m->path_of[paths_of(m, start) + which];
	uint64_t diff = 0;
	const uint64_t *w;
	unsigned k, nb;

	/* (Written over since?) */
	if (!at || m->path_end > at - 1 + m->path_words)
		return NULL;
	w = &m->paths[(at - 1) & (m->path_words - 1)];
	k = (unsigned)(w[0] & 0xff);
	nb = (unsigned)(w[0] >> 24 & 0xff);
	if ((unsigned)(w[0] >> 8 & 0xff) != n ||
	    (unsigned)(w[0] >> 16 & 0xff) != max ||
	    ((w[4] & 1) && w[5] != bp))
		return NULL;
	/* (Out at the first word that differs: of the paths kept from a
	 * frame, those of the other callers differ a few steps up.) */
	for (unsigned i = 0; i < k; i++)
		if (*PATH_AT(w[PATH_HEAD + 2 * i]) != w[PATH_HEAD + 1 + 2 * i])
			return NULL;
	if (nb)
		diff = pairs_diff(w + PATH_HEAD + 2 * k, nb, 0);
	return diff ? NULL : w;
}

/* The frames of path W after the N in FRAMES: the frames there are
 * then. */
static unsigned path_frames(const uint64_t *w, uintptr_t *frames, unsigned n)
{
	unsigned k = (unsigned)(w[0] & 0xff);
	uint64_t keep = w[1];

	for (unsigned i = 0; i < k; i++)
		if (keep >> i & 1)
			frames[n++] = w[PATH_HEAD + 1 + 2 * i];
	return n;
}

/* A walk's path under construction. */
struct path {
	uint64_t at[PATH_STEPS];  /* as in the ring */
	uintptr_t ra[PATH_STEPS];
	uint64_t bp_at[PATH_STEPS]; /* of a step that restores RBP (0:
				     * unknown), and what it read */
	uintptr_t bpv[PATH_STEPS];
	uint64_t keep, rbp, saved;
	uintptr_t bp0;            /* RBP at the start */
	unsigned k;
	bool no;   /* not to be kept */
	bool root; /* the walk ended at the stack's root */
};

/* Step X of M (KEEP: its frame kept; BPV: the RBP it restored, if it
 * does) onto path P. */
static inline void path_step(const struct memo *m, struct path *p,
			     const struct node *x, bool keep, uintptr_t bpv)
{
	/* (An address above 48 bits, which 5-level page tables give only to
	 * a program that asks, leaves no room for the node.) */
	if (p->k == PATH_STEPS || (x->flags & STEP_FP) ||
	    x->cfa >> 47) {
		p->no = true;
		return;
	}
	p->at[p->k] = (uint64_t)(x->cfa + x->ra_off) |
		      (uint64_t)(x - m->nodes) << 48;
	p->ra[p->k] = x->ra;
	p->keep |= (uint64_t)keep << p->k;
	p->rbp |= (uint64_t)((x->flags & STEP_RBP) != 0) << p->k;
	if (x->flags & STEP_SAVED) {
		p->saved |= 1ULL << p->k;
		p->bp_at[p->k] = (uint64_t)(x->cfa + x->bp_off);
		p->bpv[p->k] = bpv;
	}
	p->k++;
}

/*
 * The rest of the path node Y is last in, after Y's step (replayed: its
 * frame in FRAMES already), onto the walk's path P and its frames after
 * the *N in FRAMES, up to MAX, if that path goes on to the root or to
 * MAX frames, every word of its rest is as it was, and RBP after Y's step
 * is as it was where the rest needs it: the walk is then done.
 */
static bool path_rest(const struct memo *m, const struct node *y,
		      struct path *p, uintptr_t *frames, unsigned *n,
		      unsigned max)
{
	uint64_t in = m->in_path[y - m->nodes], pos, diff = 0;
	const uint64_t *w, *pairs;
	unsigned j, k, nb, got = *n;

	if (!in)
		return false;
	pos = (in >> 8) - 1;
	j = (unsigned)(in & 0xff);
	if (m->path_end > pos + m->path_words)
		return false;
	w = &m->paths[pos & (m->path_words - 1)];
	k = (unsigned)(w[0] & 0xff);
	nb = (unsigned)(w[0] >> 24 & 0xff);
	pairs = w + PATH_HEAD + 2 * k;
	/*
	 * (A path cut at its MAX frames goes on far enough only if this
	 * walk reaches its own MAX in it.  RBP after Y's step is the one
	 * the path had only where Y restores it, from a word checked.)
	 */
	if (j >= k || w[PATH_HEAD + 2 * j] >> 48 != (uint64_t)(y - m->nodes) ||
	    p->k + (k - j - 1) > PATH_STEPS ||
	    (!(w[0] & PATH_ROOT) &&
	     got + popcount(w[1] >> j >> 1) < max) ||
	    (j + 1 < k && (w[4] >> (j + 1) & 1) && !(w[3] >> j & 1)))
		return false;
	for (unsigned i = j + 1; i < k; i++)
		diff |= *PATH_AT(w[PATH_HEAD + 2 * i]) ^ w[PATH_HEAD + 1 + 2 * i];
	if (nb)
		diff |= pairs_diff(pairs, nb, j);
	if (diff)
		return false;
	p->root = (w[0] & PATH_ROOT) != 0;
	for (unsigned i = j + 1; i < k; i++) {
		bool keep = w[1] >> i & 1;

		if (keep && got == max) {
			p->root = false; /* (cut at MAX) */
			break;
		}
		/* (Of no node: its node now may be another's.) */
		p->at[p->k] = (w[PATH_HEAD + 2 * i] & ((1ULL << 48) - 1)) |
			      NO_NODE << 48;
		p->ra[p->k] = w[PATH_HEAD + 1 + 2 * i];
		p->keep |= (uint64_t)keep << p->k;
		p->rbp |= (w[2] >> i & 1) << p->k;
		p->saved |= (w[3] >> i & 1) << p->k;
		p->bp_at[p->k] = 0;
		for (unsigned b = 0; b < nb; b++)
			if (pairs[2 * b] >> 48 == i) {
				p->bp_at[p->k] = pairs[2 * b] &
						 ((1ULL << 48) - 1);
				p->bpv[p->k] = pairs[2 * b + 1];
			}
		p->k++;
		if (keep)
			frames[got++] = w[PATH_HEAD + 1 + 2 * i];
	}
	*n = got;
	return true;
}

/* P kept as the path of START's walks (N frames before, MAX). */
static void path_keep(struct memo *m, const struct node *start,
		      const struct path *p, unsigned n, unsigned max)
{
	uint64_t need_in = 0, pos = m->path_end, *w, *pairs;
	size_t at;
	unsigned nb = 0;
	bool need = false;
	uint64_t len;

	/* Which steps need RBP as it was, from the root down. */
	for (unsigned i = p->k; i-- > 0;) {
		if ((p->saved >> i & 1) && need) {
			if (!p->bp_at[i])
				return; /* (not known: no path) */
			nb++;
		}
		need = (p->rbp >> i & 1) || (!(p->saved >> i & 1) && need);
		need_in |= (uint64_t)need << i;
	}
	len = PATH_HEAD + 2 * (uint64_t)p->k + 2 * (uint64_t)nb;
	if ((pos & (m->path_words - 1)) + len > m->path_words)
		pos += m->path_words - (pos & (m->path_words - 1));
	w = &m->paths[pos & (m->path_words - 1)];
	w[0] = p->k | (uint64_t)n << 8 | (uint64_t)max << 16 |
	       (uint64_t)nb << 24 | (p->root ? PATH_ROOT : 0) |
	       (uint64_t)popcount(p->keep) << 40;
	w[1] = p->keep;
	w[2] = p->rbp;
	w[3] = p->saved;
	w[4] = need_in;
	w[5] = p->bp0;
	pairs = w + PATH_HEAD + 2 * p->k;
	nb = 0;
	for (unsigned i = 0; i < p->k; i++) {
		w[PATH_HEAD + 2 * i] = p->at[i];
		w[PATH_HEAD + 1 + 2 * i] = p->ra[i];
		if (p->at[i] >> 48 != NO_NODE)
			m->in_path[p->at[i] >> 48] = (pos + 1) << 8 | i;
		/* (A step's RBP is needed if the next one needs it.) */
		if ((p->saved >> i & 1) && (need_in >> i >> 1 & 1)) {
			pairs[2 * nb] = p->bp_at[i] | (uint64_t)i << 48;
			pairs[2 * nb + 1] = p->bpv[i];
			nb++;
		}
	}
	m->path_end = pos + len;
	at = paths_of(m, start);
	memmove(&m->path_of[at + 1], &m->path_of[at],
		(PATHS - 1) * sizeof(uint64_t));
	memmove(&m->notes[at + 1], &m->notes[at], (PATHS - 1) * sizeof(void *));
	m->path_of[at] = pos + 1;
	m->notes[at] = NULL;
}

/* PC's rule, through M's near ones. */
static uint64_t rule_near(struct memo *m, uintptr_t pc)
{
	uint64_t key = rule_key(pc);
	struct near *e = &m->near[((uint64_t)pc * 0x9e3779b97f4a7c15ULL) >>
				  (64 - NEAR_BITS)];

	if (e->key != key) {
		uint64_t v = rule_for(pc);

		if (!v)
			return v;
		e->key = key;
		e->value = v;
	}
	return e->value;
}

/*
 * Step from the frame at PC (a return address into it, or with FIRST its
 * exact address), SP and BP to the stack's root, keeping up to MAX frames
 * after the N in FRAMES already.  RET for the fallback: the first frame.
 * NOTE: as rec_unwind_from's.
 */
static inline unsigned walk(uintptr_t pc, uintptr_t sp, uintptr_t bp,
			    bool first, uintptr_t *frames, unsigned n,
			    unsigned max, uintptr_t skip_lo, uintptr_t skip_hi,
			    uintptr_t ret, void ***note)
{
	struct memo *m = NULL;
	/* The walk's first step, its last one, and the one the last step
	 * was linked to (the first to try from the frame it led to). */
	struct node *start = NULL, *prev = NULL, *x = NULL;
	bool stepped = false, replayed = false;
	/* The last step was along the frame pointers and kept its frame. */
	bool fp_kept = false;
	struct path path;
	unsigned n0 = n;
	bool start_known = false;
	unsigned rests = 0; /* path_rest tried */

	if (!atomic_load_explicit(&cache, memory_order_relaxed))
		goto slow;
	if (!stack_top)
		stack_top = find_stack_top();
	path.k = 0;
	path.keep = path.rbp = path.saved = 0;
	path.bp0 = bp;
	path.no = path.root = false;
	m = memo_get();
	if (m) {
		uint64_t gen = atomic_load_explicit(&generation,
						    memory_order_acquire);

		memo_hold(m);
		if (m->gen != gen || m->skip_lo != skip_lo ||
		    m->skip_hi != skip_hi) {
			memo_clear(m);
			m->gen = gen;
			m->skip_lo = skip_lo;
			m->skip_hi = skip_hi;
		}
		if (m->grow && m->nnodes < NODES_MOST) {
			memo_size(m, 2 * m->nnodes);
			m->wrapped = m->walks;
		}
		m->grow = false;
		m->walks++;
		/* The walk from here as it went the last time, if it does. */
		x = node_find(m, first ? pc : pc - 1, sp, bp, NULL);
		start_known = x != NULL;
		if (x && n < max) {
			unsigned which = 0;
			const uint64_t *w = path_check(m, x, 0, bp, n, max);

			while (!w && ++which < PATHS)
				w = path_check(m, x, which, bp, n, max);
			if (w) {
				void **place = &m->notes[paths_of(m, x) + which];

				rec_unwind_replays++;
				rec_unwind_same++;
				rec_unwind_paths++;
				if (note)
					*note = place;
				memo_release(m);
				/* (Noted: the caller has the stack.) */
				if (note && *place)
					return n + (unsigned)(w[0] >> 40 & 0xff);
				return path_frames(w, frames, n);
			}
		}
	}
	while (n < max) {
		struct rule rl;
		uintptr_t at = first ? pc : pc - 1, cfa;
		const uintptr_t *ra_at;
		struct node *y = NULL;

		/* A step kept from here whose word is as it was. */
		if (m) {
			if (x && node_ok(x, at, sp, bp))
				y = x;
			else
				y = node_find(m, at, sp, bp, x);
		}
		if (y) {
			if (prev) {
				if (y != x)
					node_link(m, prev, y);
			} else {
				start = y;
			}
			replayed = true;
			pc = y->ra;
			sp = y->cfa;
			if (y->flags & STEP_SAVED)
				bp = *(const uintptr_t *)(y->cfa + y->bp_off);
			first = false;
			prev = y;
			fp_kept = false;
			path_step(m, &path, y, y->keep, bp);
			if (y->keep) {
				frames[n++] = pc;
				fp_kept = (y->flags & STEP_FP) != 0;
			}
			if (!pc || (y->root && !y->up)) {
				path.root = true;
				break;
			}
			if (rests < 2 && !path.no && n < max &&
			    m->in_path[y - m->nodes]) {
				rests++;
				if (path_rest(m, y, &path, frames, &n, max))
					break;
			}
			x = node_up(m, y);
			continue;
		}
		x = NULL;

		unpack(m ? rule_near(m, at) : rule_for(at), &rl);
		if (rl.flags & RULE_END) {
			/*
			 * A frame pointer's return address into no code: RBP
			 * was no frame pointer there (code without CFI that
			 * is no JIT's), and what the step read no frame.
			 */
			if ((rl.flags & RULE_NOTCODE) && fp_kept) {
				n--;
				if (prev)
					prev->keep = 0;
			}
			if (prev) {
				prev->up = 0;
				prev->root = 1;
			}
			path.root = true;
			break;
		}
		if (rl.flags & RULE_SLOW)
			goto slow;
		/*
		 * Along the frame pointers, each frame above the last (so
		 * strictly up the stack), its two words inside it; where
		 * the chain breaks, so does the walk: what code without CFI
		 * did with RBP, backtrace() would not know either.  (The
		 * step before is left open: a walk that comes here steps
		 * again, and looks at RBP.)
		 */
		if ((rl.flags & RULE_FP) &&
		    (bp < sp || bp - sp > MAX_FRAME || (bp & 7) ||
		     bp > stack_top - 16)) {
			if (prev)
				prev->up = 0, prev->root = 0;
			path.no = true;
			break;
		}
		cfa = (rl.flags & RULE_CFA_RBP ? bp : sp) + (uintptr_t)rl.cfa_off;
		if (cfa <= sp || cfa - sp > MAX_FRAME ||
		    cfa + rl.ra_off + 8 > stack_top ||
		    ((rl.flags & RULE_BP_SAVED) && cfa + rl.bp_off + 8 > stack_top))
			goto slow;
		ra_at = (const uintptr_t *)(cfa + rl.ra_off);
		if (m) {
			y = node_new(m, at, sp);
			y->bp = bp;
			y->cfa = cfa;
			y->ra = *ra_at;
			y->ra_off = rl.ra_off;
			y->bp_off = rl.bp_off;
			y->flags = (rl.flags & RULE_CFA_RBP ? STEP_RBP : 0) |
				   (rl.flags & RULE_BP_SAVED ? STEP_SAVED : 0) |
				   (rl.flags & RULE_FP ? STEP_FP : 0);
			if (prev)
				node_link(m, prev, y);
			else
				start = y;
			prev = y;
			stepped = true;
		}
		pc = *ra_at;
		if (rl.flags & RULE_BP_SAVED)
			bp = *(const uintptr_t *)(cfa + rl.bp_off);
		sp = cfa;
		first = false;
		fp_kept = false;
		if (!pc) {
			if (y) {
				y->root = 1;
				path_step(m, &path, y, false, bp);
			}
			path.root = true;
			break;
		}
		/*
		 * The recorder's own frames are not the program's: its hooks
		 * on top, its thread trampoline at the root of a thread's
		 * stack.
		 */
		if (pc >= skip_lo && pc < skip_hi) {
			if (y)
				path_step(m, &path, y, false, bp);
			continue;
		}
		if (y) {
			y->keep = 1;
			path_step(m, &path, y, true, bp);
		}
		frames[n++] = pc;
		fp_kept = (rl.flags & RULE_FP) != 0;
	}
	if (!m)
		return n;
	if (replayed)
		rec_unwind_replays++;
	if (!stepped)
		rec_unwind_same++;
	/* (A path only from a frame walked from before: one walk from
	 * there may well be the only one.) */
	if (start && start_known && !path.no && path.k) {
		path_keep(m, start, &path, n0, max);
		if (note)
			*note = &m->notes[paths_of(m, start)];
	}
	memo_release(m);
	return n;
slow:
	if (m) {
		/* (The steps made stay, open: a walk that comes to them
		 * steps again where this one fell back.) */
		if (prev)
			prev->up = 0, prev->root = 0;
		memo_release(m);
	}
	atomic_fetch_add_explicit(&rec_unwind_fallbacks, 1,
				  memory_order_relaxed);
	if (!atomic_load_explicit(&linked, memory_order_acquire)) {
		/*
		 * In a signal handler (a program's malloc there), libgcc
		 * is not loaded: the stack ends at the handler's frames.
		 * Elsewhere it is, once.
		 */
		if (sigreturn_at(pc)) {
			atomic_fetch_add_explicit(&rec_unwind_cut, 1,
						  memory_order_relaxed);
			return n;
		}
		if (link_now)
			link_now();
		find_libgcc();
	}
	return from_backtrace(frames, max, skip_lo, skip_hi, ret);
}

void rec_unwind_init(void)
{
	atomic_store(&cache, rules_new(CACHE_BITS_FIRST));
	have_memo_key = pthread_key_create(&memo_key, memo_retire) == 0;
}

__attribute__((noinline)) unsigned rec_unwind(uintptr_t *frames, unsigned max,
					      uintptr_t skip_lo,
					      uintptr_t skip_hi)
{
	uintptr_t pc, sp, bp;

	__asm__ volatile("lea 0(%%rip), %0\n\t"
			 "mov %%rsp, %1\n\t"
			 "mov %%rbp, %2"
			 : "=r"(pc), "=r"(sp), "=r"(bp));
	return walk(pc, sp, bp, true, frames, 0, max, skip_lo, skip_hi,
		    (uintptr_t)__builtin_return_address(0), NULL);
}

__attribute__((noinline)) unsigned
rec_unwind_from(const struct rec_frame *from, uintptr_t *frames, unsigned max,
		uintptr_t skip_lo, uintptr_t skip_hi, void ***note)
{
	unsigned n = 0;

	if (note)
		*note = NULL;
	if (!max || !from->pc)
		return 0;
	if (from->pc < skip_lo || from->pc >= skip_hi)
		frames[n++] = from->pc;
	return walk(from->pc, from->sp, from->bp, false, frames, n, max,
		    skip_lo, skip_hi, from->pc, note);
}

/*
 * walk()'s first look, on its own: the memo's path from FROM, every word
 * of it as it was, and the note kept with it.  Most of a program's calls
 * come from where they came before, down the same stack: they end here,
 * without the whole walk's frame to set up and its arguments to pass.
 * (Anything else, the whole walk decides: a memo to make, clear or grow.)
 */
void *rec_unwind_noted(const struct rec_frame *from, unsigned max,
		       uintptr_t skip_lo, uintptr_t skip_hi)
{
	struct memo *m = memo;
	const struct node *x;
	const uint64_t *w = NULL;
	unsigned n, which;
	void *note;

	if (__builtin_expect(!m || !stack_top || !from->pc || !max, 0) ||
	    atomic_load_explicit(&m->busy, memory_order_relaxed) ||
	    rec_unwind_no_memo || m->grow || m->skip_lo != skip_lo ||
	    m->skip_hi != skip_hi ||
	    m->gen != atomic_load_explicit(&generation, memory_order_acquire))
		return NULL;
	n = from->pc < skip_lo || from->pc >= skip_hi;
	memo_hold(m);
	x = node_find(m, from->pc - 1, from->sp, from->bp, NULL);
	if (x && n < max)
		for (which = 0; !w && which < PATHS; which++)
			w = path_check(m, x, which, from->bp, n, max);
	note = w ? m->notes[paths_of(m, x) + which - 1] : NULL;
	if (note) {
		m->walks++;
		rec_unwind_replays++;
		rec_unwind_same++;
		rec_unwind_paths++;
	}
	memo_release(m);
	return note;
}

#else /* not x86-64 with _dl_find_object: glibc's unwinder */

atomic_ulong rec_unwind_fallbacks, rec_unwind_cut;
atomic_bool rec_unwind_jit;
atomic_uint rec_unwind_computed;

void rec_unwind_reserve(size_t n)
{
	(void)n;
}

size_t rec_unwind_memo_nodes(void)
{
	return 0;
}

bool rec_unwind_put(uintptr_t pc, uint64_t rule)
{
	(void)pc, (void)rule;
	return false;
}

void rec_unwind_each(void (*fn)(uintptr_t pc, uint64_t rule, void *arg),
		     void *arg)
{
	(void)fn, (void)arg;
}

bool rec_unwind_ready(void (*link)(void))
{
	(void)link;
	return true; /* (every walk is backtrace()'s: loaded now) */
}

void rec_unwind_init(void)
{
}

void rec_unwind_forget(void)
{
}

void rec_unwind_locks(bool take)
{
	(void)take;
}

void rec_unwind_after_fork(void)
{
}

__attribute__((noinline)) unsigned rec_unwind(uintptr_t *frames,
					      unsigned max, uintptr_t skip_lo,
					      uintptr_t skip_hi)
{
	return from_backtrace(frames, max, skip_lo, skip_hi,
			      (uintptr_t)__builtin_return_address(0));
}

void *rec_unwind_noted(const struct rec_frame *from, unsigned max,
		       uintptr_t skip_lo, uintptr_t skip_hi)
{
	(void)from, (void)max, (void)skip_lo, (void)skip_hi;
	return NULL;
}

__attribute__((noinline)) unsigned
rec_unwind_from(const struct rec_frame *from, uintptr_t *frames, unsigned max,
		uintptr_t skip_lo, uintptr_t skip_hi, void ***note)
{
	if (note)
		*note = NULL;
	return from_backtrace(frames, max, skip_lo, skip_hi,
			      from->pc ? from->pc
				       : (uintptr_t)__builtin_return_address(0));
}

#endif
