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
static const void *(*libgcc_find_fde)(void *pc, struct fde_bases *bases);

void rec_unwind_ready(void)
{
	void *gcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);

	if (gcc)
		libgcc_find_fde = (const void *(*)(void *, struct fde_bases *))
			dlsym(gcc, "_Unwind_Find_FDE");
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
		if (libgcc_find_fde && libgcc_find_fde((void *)pc, &bases))
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
atomic_ulong rec_unwind_fallbacks;
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

/* ---- the memo: each thread's last walks ---- */

/*
 * Most allocations come from where an earlier one of the thread came
 * from, or from near it: a loop calls the same functions again, and the
 * frames towards the stack's root are those of the last time.  So each
 * thread keeps its last walks, step by step, and a walk that comes to a
 * frame one of them stepped from (the same code address, stack pointer
 * and RBP) need not step further: from there, each step reads one or two
 * words of the stack (the return address, and the saved RBP) at places
 * that follow from the frame, so if those words still hold what they
 * held, every step goes as it went, to the same frames.  Checking a word
 * is a load and a compare, where a step is a rule lookup and a dozen
 * checks.  The rules themselves must not have changed: the walks are kept
 * for one generation of the rule cache.
 *
 * RBP is the frame pointer only where a rule says so (CFA = RBP + n);
 * elsewhere it holds whatever the code keeps in it, a loop's counter
 * maybe, which differs from one call to the next.  So a frame's RBP, and
 * the saved RBP a step reads, count only where a step further up takes
 * its CFA from RBP before another step restores it.
 *
 * A thread keeps a few walks, one per slot, so that code alternating
 * between allocations (a node, then its string) finds each one's walk.
 * A walk that starts where a slot's last one started and finds every
 * word as it was has found the same stack: the caller may keep a note
 * with the slot (the bucket of the stack) and have it back without the
 * frames.  A walk that finds none replaces the slot used longest ago,
 * and steps only until it meets that slot's steps.
 */
struct step {
	const uintptr_t *ra_at, *bp_at; /* the stack words the step read */
	uintptr_t ra, bpv;              /* and what they held */
	uintptr_t at, sp, bp;           /* the frame stepped from */
	uint32_t keep;                  /* 1: RA is a frame of the stack */
	uint32_t flags;                 /* STEP_* */
};

#define STEP_RBP 1u   /* its CFA is RBP + n */
#define STEP_SAVED 2u /* it restores RBP (BP_AT) */
#define STEP_NEED 4u  /* BP counts: a step takes its CFA from it */

/* Compare two RBPs where the step says they count. */
static bool same_bp(const struct step *s, uintptr_t bp)
{
	return !((s->bp ^ bp) & -(uintptr_t)((s->flags & STEP_NEED) != 0));
}

/* Steps a slot holds; a walk that takes more is not kept. */
#define MEMO_STEPS (REC_MAX_DEPTH + 16)
#define MEMO_SLOTS 4

struct slot {
	struct step *start;         /* where the last walk started (or NULL) */
	unsigned n;                 /* steps, the outermost first */
	unsigned used;              /* the last walk's, from step N - 1 down */
	unsigned max, kept;         /* its MAX, and the frames it found */
	bool whole;                 /* the steps go to the stack's root */
	uint64_t last;              /* when it was last used */
	void *note;                 /* the caller's, of the last walk */
};

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
	struct near near[1u << NEAR_BITS];
	struct slot slot[MEMO_SLOTS];
	struct step fresh[MEMO_STEPS]; /* a walk's own steps */
	/* Step I of slot K is s[I][K]: the slots' outer steps, those that
	 * every walk checks, share their pages. */
	struct step s[MEMO_STEPS][MEMO_SLOTS];
};

bool rec_unwind_no_memo;
__thread unsigned long rec_unwind_replays, rec_unwind_same;

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

static void memo_clear(struct memo *m)
{
	memset(m->slot, 0, sizeof(m->slot));
}

static void slot_drop(struct slot *sl)
{
	sl->n = 0;
	sl->start = NULL;
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

/* Do the words of steps R down to R + 1 - N of slot K hold what they
 * held? */
static bool unchanged(const struct memo *m, unsigned k, int r, unsigned n)
{
	uintptr_t diff = 0;

	for (int i = r; i > r - (int)n; i--) {
		const struct step *s = &m->s[i][k];

		diff |= (*s->ra_at ^ s->ra) | (*s->bp_at ^ s->bpv);
	}
	return !diff;
}

/*
 * Replay slot K from its step R (which starts where the walk is), after
 * the walk's *N frames, up to MAX: the frames, *N, and *STEPS the steps
 * it took; false if the stack is no longer what the slot says.
 */
static bool replay(const struct memo *m, unsigned k, int r,
		   uintptr_t *frames, unsigned *n, unsigned max,
		   unsigned *steps)
{
	unsigned got = *n;
	int i;

	for (i = r; i >= 0 && got < max; i--) {
		const struct step *s = &m->s[i][k];

		if (*s->ra_at != s->ra || *s->bp_at != s->bpv)
			return false;
		frames[got] = s->ra;
		got += (unsigned)s->keep;
	}
	/* (Steps of a walk that stopped at its MAX frames may end short.) */
	if (i < 0 && got < max && !m->slot[k].whole)
		return false;
	*n = got;
	*steps = (unsigned)(r - i);
	return true;
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
	struct slot *sl = NULL;
	unsigned k = 0, nf = 0, used = 0;
	int r = -1;
	/* The last step was along the frame pointers and kept its frame;
	 * the walk ended on what the last frame's RBP was. */
	bool fp_kept = false, end_on_bp = false;

	if (!atomic_load_explicit(&cache, memory_order_relaxed))
		goto slow;
	if (!stack_top)
		stack_top = find_stack_top();
	m = memo_get();
	if (m) {
		uintptr_t at = first ? pc : pc - 1;
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
		m->walks++;
		/* The same stack as the last time from here? */
		for (k = 0; note && k < MEMO_SLOTS; k++) {
			sl = &m->slot[k];
			if (sl->start && sl->start->sp == sp &&
			    sl->start->at == at && same_bp(sl->start, bp) &&
			    sl->note && sl->max == max &&
			    unchanged(m, k, (int)sl->n - 1, sl->used)) {
				rec_unwind_same++;
				sl->last = m->walks;
				*note = &sl->note;
				memo_release(m);
				return sl->kept;
			}
		}
		/* No: this walk is to be the slot used longest ago. */
		k = 0;
		for (unsigned i = 1; i < MEMO_SLOTS; i++)
			if (m->slot[i].last < m->slot[k].last)
				k = i;
		sl = &m->slot[k];
		sl->note = NULL;
		r = (int)sl->n - 1;
	}
	while (n < max) {
		struct rule rl;
		uintptr_t at = first ? pc : pc - 1, cfa;
		const uintptr_t *ra_at, *bp_at;

		/* The slot's step from here, if its walk came this way. */
		while (r >= 0 && m->s[r][k].sp < sp)
			r--;
		if (r >= 0 && m->s[r][k].sp == sp && m->s[r][k].at == at &&
		    same_bp(&m->s[r][k], bp)) {
			unsigned steps;

			if (replay(m, k, r, frames, &n, max, &steps)) {
				rec_unwind_replays++;
				used = nf + steps;
				goto replayed;
			}
			r = -1; /* (the stack has changed further up) */
		}

		unpack(m ? rule_near(m, at) : rule_for(at), &rl);
		if (rl.flags & RULE_END) {
			/*
			 * A frame pointer's return address into no code: RBP
			 * was no frame pointer there (code without CFI that
			 * is no JIT's), and what the step read no frame.
			 */
			if ((rl.flags & RULE_NOTCODE) && fp_kept) {
				n--;
				if (m && nf <= MEMO_STEPS)
					m->fresh[nf - 1].keep = 0;
			}
			break;
		}
		if (rl.flags & RULE_SLOW)
			goto slow;
		/*
		 * Along the frame pointers, each frame above the last (so
		 * strictly up the stack), its two words inside it; where
		 * the chain breaks, so does the walk: what code without CFI
		 * did with RBP, backtrace() would not know either.
		 */
		if ((rl.flags & RULE_FP) &&
		    (bp < sp || bp - sp > MAX_FRAME || (bp & 7) ||
		     bp > stack_top - 16)) {
			end_on_bp = true;
			break;
		}
		cfa = (rl.flags & RULE_CFA_RBP ? bp : sp) + (uintptr_t)rl.cfa_off;
		if (cfa <= sp || cfa - sp > MAX_FRAME ||
		    cfa + rl.ra_off + 8 > stack_top ||
		    ((rl.flags & RULE_BP_SAVED) && cfa + rl.bp_off + 8 > stack_top))
			goto slow;
		ra_at = (const uintptr_t *)(cfa + rl.ra_off);
		bp_at = rl.flags & RULE_BP_SAVED
				? (const uintptr_t *)(cfa + rl.bp_off)
				: ra_at;
		if (m && nf < MEMO_STEPS)
			m->fresh[nf] = (struct step){
				ra_at, bp_at, *ra_at, *bp_at, at, sp, bp, 0,
				(rl.flags & RULE_CFA_RBP ? STEP_RBP : 0) |
					(rl.flags & RULE_BP_SAVED ? STEP_SAVED
								  : 0) };
		pc = *ra_at;
		if (rl.flags & RULE_BP_SAVED)
			bp = *bp_at;
		sp = cfa;
		first = false;
		fp_kept = false;
		nf++;
		if (!pc)
			break;
		/*
		 * The recorder's own frames are not the program's: its hooks
		 * on top, its thread trampoline at the root of a thread's
		 * stack.
		 */
		if (pc >= skip_lo && pc < skip_hi)
			continue;
		if (m && nf <= MEMO_STEPS)
			m->fresh[nf - 1].keep = 1;
		frames[n++] = pc;
		fp_kept = (rl.flags & RULE_FP) != 0;
	}
	if (!m)
		return n;
	/* The walk stepped to its end: its steps are all the slot has. */
	r = -1;
	sl->whole = n < max;
	used = nf;
replayed:
	/*
	 * Its own steps, under the slot's from step R on (if it got there),
	 * the outermost first: whether a step's RBP counts depends on the
	 * steps above it.  Where a saved RBP does not count, the step
	 * checks its return address twice instead.
	 */
	if ((unsigned)(r + 1) + nf <= MEMO_STEPS) {
		bool need = r >= 0 ? (m->s[r][k].flags & STEP_NEED) != 0
				   : end_on_bp;

		for (unsigned j = nf; j-- > 0;) {
			struct step *s = &m->s[r + (int)nf - (int)j][k];
			bool saved;

			*s = m->fresh[j];
			saved = s->flags & STEP_SAVED;
			if (!saved || !need) {
				s->bp_at = s->ra_at;
				s->bpv = s->ra;
			}
			need = (s->flags & STEP_RBP) || (!saved && need);
			if (need)
				s->flags |= STEP_NEED;
		}
		sl->n = (unsigned)(r + 1) + nf;
		sl->start = sl->n ? &m->s[sl->n - 1][k] : NULL;
	} else {
		slot_drop(sl);
	}
	sl->used = used;
	sl->max = max;
	sl->kept = n;
	sl->last = m->walks;
	memo_release(m);
	if (note && sl->n)
		*note = &sl->note;
	return n;
slow:
	if (m) {
		slot_drop(sl);
		memo_release(m);
	}
	atomic_fetch_add_explicit(&rec_unwind_fallbacks, 1,
				  memory_order_relaxed);
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

#else /* not x86-64 with _dl_find_object: glibc's unwinder */

atomic_ulong rec_unwind_fallbacks;
atomic_bool rec_unwind_jit;
atomic_uint rec_unwind_computed;

void rec_unwind_reserve(size_t n)
{
	(void)n;
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

void rec_unwind_ready(void)
{
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
