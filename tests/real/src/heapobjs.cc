// A C++ program that knows what its heap blocks are and which of them it
// has leaked, for dmprof's typing of blocks without allocation stacks and
// its leak search from outside (chap's rule) to be checked against.  It
// allocates a known set, writes KNOWN, prints "ready" and waits for a
// signal (as heapknown does: tests/real/heap.sh's hk_start waits for it).
//
// Usage: heapobjs KNOWN      (built with g++ -g -O1 or -O2 -pthread)
//
// What it holds:
//   - instances of 3 polymorphic classes, their vtable pointer as their
//     first word: 100 Session, 37 ns::Conn<int> (a template in a
//     namespace) and 250 Shape (derived from the abstract class Base: no
//     block has Base's vtable); all held in global arrays;
//   - 42 Record (polymorphic) and 25 Point (not) made by std::make_shared,
//     each in one block with its shared_ptr's control block (a
//     std::_Sp_counted_ptr_inplace<T, ...>, whose vtable is the block's
//     first word): named "Record (make_shared)", "Point (make_shared)";
//     their shared_ptrs in global arrays;
//   - library layouts: 50 long std::string bodies (16 to 65 characters,
//     held in a global std::vector<std::string>), 31 std::vector bodies
//     (30 of std::vector<int>, partly filled, and the body of that
//     vector of strings), one std::unordered_map<int,int> of 90 elements
//     (one buckets array, 90 nodes), one std::map<int,int> of 70 elements
//     (70 nodes);
//   - blocks each referenced only from one place: a local variable of a
//     second thread (stack), a __thread variable of that thread (tls), a
//     global pointer (global), a global pointer to the block + 40
//     (interior);
//   - 75 leaked blocks: 64 of 200 to 1208 bytes filled with "LEAKED-NNNN",
//     nothing pointing at them; 8 in 4 pairs whose first words point at
//     each other (leaked, referenced); a chain of 3 (the head points at
//     the second, the second at the third): 65 are unreferenced;
//   - freed blocks of 40 bytes (7 in the tcache, 5 in a fastbin) and of
//     about 1200 bytes (5 sorted into the bins, 3 left unsorted).
// Each special block is followed by a block the program keeps (a guard)
// and nothing else points into it: the pointers glibc keeps to free
// chunks and to top point at a chunk's header, which lies in the last 8
// usable bytes of the block before it.
//
// No stale copy of a leaked block's address is left: the blocks are made
// in a function whose frame, and all below it, are zeroed afterwards
// (scrub_stack, below the stack pointer of main, whose own frame never
// held one); the registers are cleared before each thread waits in
// pause(2); no address goes into a block later freed; KNOWN is formatted
// into a static buffer, written with write(2) (no stdio, no heap) and
// the buffer zeroed.  A core from gcore holds the address of a leaked
// block nowhere but in the leaked blocks pointing at each other.
//
// KNOWN: one fact a line, fields separated by one space, addresses as
// 0x... (as %p), sizes as malloc_usable_size() (for these blocks the
// chunk's size - 8):
//   class NAME COUNT BYTES       blocks whose dynamic type is NAME
//                                (demangled: Session, ns::Conn<int>,
//                                Shape, and Base with 0 0; a make_shared
//                                block's as dmprof names it, "Record
//                                (make_shared)": NAME may hold spaces,
//                                the last two fields are the numbers),
//                                BYTES the sum of their sizes (chap's
//                                "count used Base" counts derived
//                                classes too: 250)
//   layout KIND COUNT BYTES      KIND, with chap's name for it:
//                                  long-string        %LongString
//                                  vector-body        %VectorBody
//                                  unordered-buckets  %UnorderedMapOrSetBuckets
//                                  unordered-node     %UnorderedMapOrSetNode
//                                  map-node           %MapOrSetNode
//   block TYPE ADDR SIZE         each block of a class line (TYPE its
//                                NAME) or a layout line (TYPE its KIND),
//                                and each guard (TYPE guard), all anchored
//   anchored-by HOW ADDR SIZE    HOW: stack, tls, global or interior
//                                (a thread's static TLS lies at the top
//                                of its stack's mapping, above the stack
//                                pointer: chap calls tls a stack anchor)
//   leaked ADDR SIZE KIND        KIND: plain, cycle, chain-head or chain
//   unreferenced ADDR SIZE       (each also on a leaked line)
//   freed ADDR SIZE LIST         SIZE before the free; LIST where glibc
//                                puts it: tcache, fastbin, bin or unsorted
//                                (chap knows no tcache: it counts 6 of
//                                the 7 as leaked, the 7th anchored by the
//                                tcache's own block)
//   total leaked COUNT BYTES
//   total unreferenced COUNT BYTES
//   mallinfo2 arena N ordblks N smblks N hblks N hblkhd N usmblks N
//             fsmblks N uordblks N fordblks N keepcost N    (one line)
// Startup allocations of libc and libstdc++ (in use, anchored) are not
// listed.
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

// Functions whose frames hold blocks' addresses: never inlined into a
// frame that stays.
#if defined(__clang__)
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

enum {
	SESSIONS = 100,
	CONNS = 37,
	SHAPES = 250,
	RECORDS = 42,
	POINTS = 25,
	STRINGS = 50,
	VECTORS = 30,
	UMAP_ELEMS = 90,
	MAP_ELEMS = 70,
	LEAKED_PLAIN = 64,
	CYCLE_PAIRS = 4,
	CHAIN = 3,
	LEAKED = LEAKED_PLAIN + 2 * CYCLE_PAIRS + CHAIN,
	SMALL_FREED = 12, /* 7 fill the tcache bin, 5 go to a fastbin */
	BIG_FREED = 8,    /* 5 sorted into the bins, 3 left unsorted */
	BIG_SORTED = 5,
	SCRUB = 256 * 1024, /* bytes zeroed below the stack pointer */
};

class Session {
public:
	explicit Session(int id) : id_(id)
	{
		snprintf(tag_, sizeof(tag_), "SESSION-%04d", id);
	}
	virtual ~Session()
	{
	}
	virtual int id() const
	{
		return id_;
	}

private:
	int id_;
	char tag_[20];
};

namespace ns
{
template <class T> class Conn {
public:
	explicit Conn(T v) : value_(v)
	{
	}
	virtual ~Conn()
	{
	}
	virtual T value() const
	{
		return value_;
	}

private:
	T value_;
	long counters_[5] = {};
};
} // namespace ns

class Base {
public:
	virtual ~Base()
	{
	}
	virtual double area() const = 0;
};

class Shape : public Base {
public:
	Shape(double w, double h) : w_(w), h_(h)
	{
	}
	double area() const override
	{
		return w_ * h_;
	}

private:
	double w_, h_;
};

// Made by std::make_shared: the object after its control block.
class Record {
public:
	explicit Record(int ttl) : ttl_(ttl)
	{
		snprintf(name_, sizeof(name_), "RECORD-%04d", ttl);
	}
	virtual ~Record()
	{
	}
	virtual int ttl() const
	{
		return ttl_;
	}

private:
	int ttl_;
	char name_[20];
};

struct Point {
	double x, y;
};

// The roots: globals (not static, so that no store to them is dropped).
Session *g_sessions[SESSIONS];
ns::Conn<int> *g_conns[CONNS];
Base *g_shapes[SHAPES];
std::shared_ptr<Record> g_records[RECORDS];
std::shared_ptr<Point> g_points[POINTS];
std::vector<std::string> g_strings;
std::vector<int> g_vectors[VECTORS];
std::unordered_map<int, int> g_umap;
std::map<int, int> g_map;
void *volatile g_anchor_global;
char *volatile g_anchor_interior; /* the block + 40 */
__thread void *volatile t_anchor_tls;
void *g_guards[256];
int g_nguards;
void *volatile g_thread_guard;
void *volatile g_sorter;

// KNOWN's text, formatted here (never in a heap block) and zeroed once
// written: it names the leaked blocks.
static char g_text[1 << 18];
static size_t g_len;

static pthread_barrier_t g_allocated;
static volatile pid_t g_thread_tid;

static void die(const char *msg)
{
	(void)!write(2, "heapobjs: ", 10);
	(void)!write(2, msg, strlen(msg));
	(void)!write(2, "\n", 1);
	abort();
}

__attribute__((format(printf, 1, 2))) static void emit(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(g_text + g_len, sizeof(g_text) - g_len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(g_text) - g_len)
		die("KNOWN's buffer is too small");
	g_len += (size_t)n;
}

static size_t usable(const void *p)
{
	return malloc_usable_size(const_cast<void *>(p));
}

// Fill all of P's usable bytes with TAG, over and over: no byte is left
// as it was, and no aligned word of it looks like an address.
static void *fill(void *p, const char *tag)
{
	size_t n = usable(p), len = strlen(tag);

	if (!p)
		die("out of memory");
	for (size_t off = 0; off < n; off += len)
		memcpy((char *)p + off, tag, n - off < len ? n - off : len);
	return p;
}

// The block whose chunk comes next in memory (P is an arena chunk's).
static void *next_block(const void *p)
{
	return (char *)p + (((const size_t *)p)[-1] & ~(size_t)7);
}

// A block kept for good, so that the chunk after P's is in use: no free
// list's pointer to a chunk header, nor top, lands in P's last word.
// Blocks that glibc gives from elsewhere (its tcache, say) are kept as
// guards too, until one is the chunk after P's.
static void *guard_after(const void *p)
{
	for (;;) {
		void *g = fill(malloc(24), "GUARD ");

		if ((size_t)g_nguards == sizeof(g_guards) / sizeof(*g_guards))
			die("no guard lands after its block");
		g_guards[g_nguards++] = g;
		emit("block guard %p %zu\n", g, usable(g));
		if (!p || next_block(p) == g)
			return g;
	}
}

// Zero the SCRUB bytes below the stack pointer: the dead frames of all
// that was called so far (malloc's, vsnprintf's).  Called from a frame
// that never held a leaked address (main's, the thread's function's).
NOIPA static void scrub_stack(void)
{
#if defined(__x86_64__)
	__asm__ volatile("lea -%c[n](%%rsp), %%rdi\n\t"
			 "mov %[w], %%rcx\n\t"
			 "xor %%eax, %%eax\n\t"
			 "rep stosq"
			 :
			 : [n] "i"(SCRUB), [w] "i"(SCRUB / 8)
			 : "rax", "rcx", "rdi", "memory", "cc");
#else
	char buf[SCRUB];

	explicit_bzero(buf, sizeof(buf));
#endif
}

// Clear the registers a callee may clobber (the others hold the
// caller's values, which never were a leaked address): integer, SSE, and
// AVX and AVX-512 (glibc's string functions use ymm16-31) where present.
NOIPA static void clear_registers(void)
{
#if defined(__x86_64__)
	__asm__ volatile("xor %%eax, %%eax\n\txor %%ecx, %%ecx\n\t"
			 "xor %%edx, %%edx\n\txor %%esi, %%esi\n\t"
			 "xor %%edi, %%edi\n\txor %%r8d, %%r8d\n\t"
			 "xor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\t"
			 "xor %%r11d, %%r11d\n\t"
			 "pxor %%xmm0, %%xmm0\n\tpxor %%xmm1, %%xmm1\n\t"
			 "pxor %%xmm2, %%xmm2\n\tpxor %%xmm3, %%xmm3\n\t"
			 "pxor %%xmm4, %%xmm4\n\tpxor %%xmm5, %%xmm5\n\t"
			 "pxor %%xmm6, %%xmm6\n\tpxor %%xmm7, %%xmm7\n\t"
			 "pxor %%xmm8, %%xmm8\n\tpxor %%xmm9, %%xmm9\n\t"
			 "pxor %%xmm10, %%xmm10\n\tpxor %%xmm11, %%xmm11\n\t"
			 "pxor %%xmm12, %%xmm12\n\tpxor %%xmm13, %%xmm13\n\t"
			 "pxor %%xmm14, %%xmm14\n\tpxor %%xmm15, %%xmm15"
			 :
			 :
			 : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10",
			   "r11", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5",
			   "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
			   "xmm12", "xmm13", "xmm14", "xmm15", "memory", "cc");
	if (__builtin_cpu_supports("avx"))
		__asm__ volatile("vzeroall" ::: "memory");
	if (__builtin_cpu_supports("avx512f"))
		__asm__ volatile(
			"vpxord %%zmm16, %%zmm16, %%zmm16\n\t"
			"vpxord %%zmm17, %%zmm17, %%zmm17\n\t"
			"vpxord %%zmm18, %%zmm18, %%zmm18\n\t"
			"vpxord %%zmm19, %%zmm19, %%zmm19\n\t"
			"vpxord %%zmm20, %%zmm20, %%zmm20\n\t"
			"vpxord %%zmm21, %%zmm21, %%zmm21\n\t"
			"vpxord %%zmm22, %%zmm22, %%zmm22\n\t"
			"vpxord %%zmm23, %%zmm23, %%zmm23\n\t"
			"vpxord %%zmm24, %%zmm24, %%zmm24\n\t"
			"vpxord %%zmm25, %%zmm25, %%zmm25\n\t"
			"vpxord %%zmm26, %%zmm26, %%zmm26\n\t"
			"vpxord %%zmm27, %%zmm27, %%zmm27\n\t"
			"vpxord %%zmm28, %%zmm28, %%zmm28\n\t"
			"vpxord %%zmm29, %%zmm29, %%zmm29\n\t"
			"vpxord %%zmm30, %%zmm30, %%zmm30\n\t"
			"vpxord %%zmm31, %%zmm31, %%zmm31" ::
				: "memory");
#endif
}

// The second thread's blocks, in its own arena: one its stack holds,
// one its TLS holds, then a guard.  Returns the first.
NOIPA static void *thread_allocate(void)
{
	void *s = fill(malloc(96), "ANCHOR-STACK ");
	void *t = fill(malloc(112), "ANCHOR-TLS ");

	if (next_block(s) != t)
		die("the thread's blocks are not contiguous");
	t_anchor_tls = t;
	g_thread_guard = guard_after(t);
	emit("anchored-by stack %p %zu\n", s, usable(s));
	emit("anchored-by tls %p %zu\n", t, usable(t));
	return s;
}

static void *thread_main(void *)
{
	void *volatile anchor;

	g_thread_tid = (pid_t)syscall(SYS_gettid);
	anchor = thread_allocate();
	scrub_stack();
	pthread_barrier_wait(&g_allocated);
	clear_registers();
	for (;;)
		pause();
	return anchor;
}

NOIPA static void make_objects(void)
{
	size_t bytes[3] = {0, 0, 0};

	for (int i = 0; i < SESSIONS; i++)
		g_sessions[i] = new Session(i);
	for (int i = 0; i < CONNS; i++)
		g_conns[i] = new ns::Conn<int>(i);
	for (int i = 0; i < SHAPES; i++)
		g_shapes[i] = new Shape(i, 2.0);
	for (int i = 0; i < SESSIONS; i++) {
		bytes[0] += usable(g_sessions[i]);
		emit("block Session %p %zu\n", (void *)g_sessions[i],
		     usable(g_sessions[i]));
	}
	for (int i = 0; i < CONNS; i++) {
		bytes[1] += usable(g_conns[i]);
		emit("block ns::Conn<int> %p %zu\n", (void *)g_conns[i],
		     usable(g_conns[i]));
	}
	for (int i = 0; i < SHAPES; i++) {
		bytes[2] += usable(g_shapes[i]);
		emit("block Shape %p %zu\n", (void *)g_shapes[i],
		     usable(g_shapes[i]));
	}
	emit("class Session %d %zu\n", SESSIONS, bytes[0]);
	emit("class ns::Conn<int> %d %zu\n", CONNS, bytes[1]);
	emit("class Shape %d %zu\n", SHAPES, bytes[2]);
	emit("class Base 0 0\n");
}

// The block of a make_shared object P: libstdc++'s control block (its
// vtable, the use and weak counts: 16 bytes) comes first.
static void *shared_block(const void *p)
{
	return (char *)const_cast<void *>(p) - 16;
}

NOIPA static void make_shared_objects(void)
{
	size_t bytes[2] = {0, 0};

	for (int i = 0; i < RECORDS; i++)
		g_records[i] = std::make_shared<Record>(i);
	for (int i = 0; i < POINTS; i++)
		g_points[i] = std::make_shared<Point>(Point{ 1.0 * i, 2.0 });
	for (int i = 0; i < RECORDS; i++) {
		void *b = shared_block(g_records[i].get());

		bytes[0] += usable(b);
		emit("block Record (make_shared) %p %zu\n", b, usable(b));
	}
	for (int i = 0; i < POINTS; i++) {
		void *b = shared_block(g_points[i].get());

		bytes[1] += usable(b);
		emit("block Point (make_shared) %p %zu\n", b, usable(b));
	}
	emit("class Record (make_shared) %d %zu\n", RECORDS, bytes[0]);
	emit("class Point (make_shared) %d %zu\n", POINTS, bytes[1]);
}

NOIPA static void make_layouts(void)
{
	size_t strings = 0, vectors = 0, nodes = 0, mnodes = 0, n;
	char text[80];
	void *buckets;

	g_strings.reserve(STRINGS); /* one body, never reallocated */
	for (int i = 0; i < STRINGS; i++) {
		size_t len = 16 + (size_t)i;

		snprintf(text, sizeof(text), "STRING-%02d-", i);
		memset(text + 10, 'a' + i % 26, len - 10);
		g_strings.push_back(std::string(text, len));
		if (g_strings.back().capacity() < 16)
			die("a long string is not on the heap");
		n = usable(g_strings.back().data());
		strings += n;
		emit("block long-string %p %zu\n",
		     (const void *)g_strings.back().data(), n);
	}
	for (int i = 0; i < VECTORS; i++) {
		g_vectors[i].reserve(4 + (size_t)i);
		for (int j = 0; j < 2 + i / 2; j++)
			g_vectors[i].push_back(i * 100 + j);
		n = usable(g_vectors[i].data());
		vectors += n;
		emit("block vector-body %p %zu\n", (void *)g_vectors[i].data(),
		     n);
	}
	n = usable(g_strings.data());
	vectors += n;
	emit("block vector-body %p %zu\n", (void *)g_strings.data(), n);
	emit("layout long-string %d %zu\n", STRINGS, strings);
	emit("layout vector-body %d %zu\n", VECTORS + 1, vectors);

	// libstdc++: _Hashtable's first member is its buckets array; a node
	// of an int key (hash not cached) is the next pointer, then the
	// value; an _Rb_tree node is 32 bytes of links, then the value.
	g_umap.reserve(UMAP_ELEMS);
	for (int i = 0; i < UMAP_ELEMS; i++)
		g_umap[i * 7] = i;
	memcpy(&buckets, (void *)&g_umap, sizeof(buckets));
	if (usable(buckets) < g_umap.bucket_count() * sizeof(void *))
		die("the buckets array is not where libstdc++ keeps it");
	emit("block unordered-buckets %p %zu\n", buckets, usable(buckets));
	emit("layout unordered-buckets 1 %zu\n", usable(buckets));
	for (auto &kv : g_umap) {
		void *node = (char *)&kv - sizeof(void *);

		nodes += usable(node);
		emit("block unordered-node %p %zu\n", node, usable(node));
	}
	emit("layout unordered-node %d %zu\n", UMAP_ELEMS, nodes);
	for (int i = 0; i < MAP_ELEMS; i++)
		g_map[i * 3] = i;
	for (auto &kv : g_map) {
		void *node = (char *)&kv - 32;

		mnodes += usable(node);
		emit("block map-node %p %zu\n", node, usable(node));
	}
	emit("layout map-node %d %zu\n", MAP_ELEMS, mnodes);
}

NOIPA static void make_anchors(void)
{
	void *g = fill(malloc(136), "ANCHOR-GLOBAL ");
	char *i;

	guard_after(g);
	i = (char *)fill(malloc(160), "ANCHOR-INTERIOR ");
	guard_after(i);
	g_anchor_global = g;
	g_anchor_interior = i + 40;
	emit("anchored-by global %p %zu\n", g, usable(g));
	emit("anchored-by interior %p %zu\n", (void *)i, usable(i));
}

// The 75 leaked blocks, then a guard, contiguous.  Their addresses live
// only in this frame (zeroed later by scrub_stack) and, as text, in
// g_text.
NOIPA static void make_leaks(void)
{
	void *b[LEAKED];
	const char *kind[LEAKED];
	char tag[32];
	size_t bytes = 0, ubytes = 0;
	int k = 0;

	for (int i = 0; i < LEAKED_PLAIN; i++, k++) {
		snprintf(tag, sizeof(tag), "LEAKED-%04d ", i);
		b[k] = fill(malloc(200 + 16 * (size_t)i), tag);
		kind[k] = "plain";
	}
	for (int i = 0; i < CYCLE_PAIRS; i++, k += 2) {
		snprintf(tag, sizeof(tag), "CYCLE-%d-A ", i);
		b[k] = fill(malloc(48), tag);
		snprintf(tag, sizeof(tag), "CYCLE-%d-B ", i);
		b[k + 1] = fill(malloc(48), tag);
		*(void **)b[k] = b[k + 1];
		*(void **)b[k + 1] = b[k];
		kind[k] = kind[k + 1] = "cycle";
	}
	for (int i = 0; i < CHAIN; i++, k++) {
		snprintf(tag, sizeof(tag), "CHAIN-%d ", i);
		b[k] = fill(malloc(64), tag);
		kind[k] = i ? "chain" : "chain-head";
		if (i)
			*(void **)b[k - 1] = b[k];
	}
	for (k = 0; k + 1 < LEAKED; k++)
		if (next_block(b[k]) != b[k + 1])
			die("the leaked blocks are not contiguous");
	guard_after(b[LEAKED - 1]);
	for (k = 0; k < LEAKED; k++) {
		bytes += usable(b[k]);
		emit("leaked %p %zu %s\n", b[k], usable(b[k]), kind[k]);
	}
	for (k = 0; k < LEAKED; k++)
		if (!strcmp(kind[k], "plain") || !strcmp(kind[k], "chain-head")) {
			ubytes += usable(b[k]);
			emit("unreferenced %p %zu\n", b[k], usable(b[k]));
		}
	emit("total leaked %d %zu\n", LEAKED, bytes);
	emit("total unreferenced %d %zu\n", LEAKED_PLAIN + 1, ubytes);
	explicit_bzero(b, sizeof(b));
}

static void write_known(const char *path)
{
	struct mallinfo2 m = mallinfo2();
	size_t off = 0;
	int fd;

	emit("mallinfo2 arena %zu ordblks %zu smblks %zu hblks %zu "
	     "hblkhd %zu usmblks %zu fsmblks %zu uordblks %zu fordblks %zu "
	     "keepcost %zu\n",
	     m.arena, m.ordblks, m.smblks, m.hblks, m.hblkhd, m.usmblks,
	     m.fsmblks, m.uordblks, m.fordblks, m.keepcost);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("cannot open KNOWN");
	while (off < g_len) {
		ssize_t n = write(fd, g_text + off, g_len - off);

		if (n <= 0)
			die("cannot write KNOWN");
		off += (size_t)n;
	}
	if (close(fd))
		die("cannot write KNOWN");
	explicit_bzero(g_text, sizeof(g_text));
}

// Wait until the thread sleeps in pause(2) (past the barrier's futex).
static void wait_parked(void)
{
#if defined(SYS_pause)
	long want = SYS_pause;
#else
	long want = SYS_ppoll;
#endif
	char path[64], buf[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall",
		 (int)g_thread_tid);
	for (int i = 0; i < 1000; i++) {
		int fd = open(path, O_RDONLY);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

		if (fd >= 0)
			close(fd);
		if (n > 0) {
			buf[n] = '\0';
			if (strtol(buf, NULL, 10) == want && buf[0] != 'r')
				return;
		}
		usleep(1000);
	}
	die("the thread does not get to pause()");
}

// The leaked blocks and the freed ones.  The freed ones are made first,
// each between two guards (no merging), so that no free chunk follows a
// leaked one; they are freed last.
NOIPA static void make_leaks_and_frees(void)
{
	void *small[SMALL_FREED], *big[BIG_FREED];

	guard_after(NULL);
	for (int i = 0; i < SMALL_FREED; i++) {
		small[i] = fill(malloc(40), "FREED ");
		guard_after(small[i]);
	}
	for (int i = 0; i < BIG_FREED; i++) {
		big[i] = fill(malloc(1200 + 16 * (size_t)(i % 3)), "FREED ");
		guard_after(big[i]);
	}
	make_leaks();
	// Big ones past the tcache's largest: unsorted, then sorted into
	// the bins by a request none fits; then 3 more stay unsorted.  The
	// small ones last (the large request would consolidate fastbins).
	for (int i = 0; i < BIG_FREED; i++) {
		emit("freed %p %zu %s\n", big[i], usable(big[i]),
		     i < BIG_SORTED ? "bin" : "unsorted");
		if (i == BIG_SORTED) {
			g_sorter = fill(malloc(4000), "SORTER ");
			emit("block guard %p %zu\n", g_sorter, usable(g_sorter));
		}
		free(big[i]);
	}
	for (int i = 0; i < SMALL_FREED; i++) {
		emit("freed %p %zu %s\n", small[i], usable(small[i]),
		     i < 7 ? "tcache" : "fastbin");
		free(small[i]);
	}
}

// main's own frame never holds an address of the program's blocks: all
// is done in functions below it, whose frames scrub_stack zeroes.
int main(int argc, char **argv)
{
	pthread_t tid;

	if (argc != 2) {
		fprintf(stderr, "usage: heapobjs KNOWN\n");
		return 2;
	}
	pthread_barrier_init(&g_allocated, NULL, 2);
	if (pthread_create(&tid, NULL, thread_main, NULL))
		die("cannot create a thread");
	pthread_barrier_wait(&g_allocated);
	make_objects();
	make_shared_objects();
	make_layouts();
	make_anchors();
	make_leaks_and_frees();
	write_known(argv[1]);
	wait_parked();

	scrub_stack();
	clear_registers();
	if (write(1, "ready\n", 6) != 6)
		return 1;
	for (;;)
		pause();
}
