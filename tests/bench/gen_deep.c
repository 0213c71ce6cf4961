/*
 * make bench: a large synthetic deep-dump run, as Chromium's producer
 * wrote them, for the scale benchmarks.
 *
 *   gen_deep DIR SNAPSHOTS LINES BUCKETS
 *
 * writes DIR/deep.01234.NNNN.heap (DUMP_DEEP_6 with META, an MMAP_LIST of
 * about 300 VMAs with hooked and unhooked regions, GLOBAL_STATS that agree
 * with it, and LINES stack lines), the .buckets files that introduce the
 * BUCKETS buckets (depth 10 to 30) over the run, the .maps file and a
 * .symmap directory naming 50,000 functions of a Chromium-like binary, so
 * that the l2 policy's rules have names to work on.  Every snapshot brings
 * BUCKETS / SNAPSHOTS new buckets and reuses older ones for the rest, so
 * every bucket appears.  Deterministic: the same arguments give the same
 * files.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NFUNCS 50000
#define NADDRS 200000
#define NALLOC 64            /* allocation-site addresses */
#define NMMAP 2000           /* the first buckets are mmap buckets */
#define TEXT_VMA 0x555500000000ULL
#define TEXT_OFF 0x1000ULL
#define FUNC_SIZE 0x800ULL
#define PAGE 4096ULL

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t below(uint64_t n)
{
	return next() % n;
}

static FILE *create(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "gen_deep: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return f;
}

static void done(FILE *f)
{
	if (ferror(f) || fclose(f)) {
		fprintf(stderr, "gen_deep: write error\n");
		exit(1);
	}
}

/* Names the l2 policy looks for, and ordinary ones around them. */
static const char *const special[] = {
	"WebCore::FontCache::getCachedFontData(WebCore::FontDescription const&)",
	"SkBitmap::allocPixels(SkBitmap::Allocator*, SkColorTable*)",
	"WebCore::RenderArena::allocate(unsigned long)",
	"WebCore::RenderStyle::create()",
	"WebCore::RenderStyle::clone(WebCore::RenderStyle const*)",
	"WebCore::SharedBuffer::create(char const*, int)",
	"WebCore::SharedBuffer::append(char const*, unsigned int)",
	"WebCore::XMLHttpRequest::didReceiveData(char const*, int)",
	"WebCore::DocumentWriter::addData(char const*, unsigned long)",
	"WebCore::HTMLDivElement::create(WebCore::QualifiedName const&, WebCore::Document*)",
	"WebCore::Text::create(WebCore::Document*, WTF::String const&)",
	"WebCore::HTMLElementFactory::createHTMLElement(WebCore::QualifiedName const&)",
	"WebCore::StylePropertySet::create(WebCore::CSSParserMode)",
	"WebCore::CachedResource::data(WTF::PassRefPtr<WebCore::ResourceBuffer>, bool)",
	"WebCore::ScriptElement::executeScript(WebCore::ScriptSourceCode const&)",
	"WebCore::V8LazyEventListener::create(WTF::AtomicString const&)",
	"WebCore::Document::write(WTF::String const&, WebCore::Document*)",
	"WebCore::Node::createRendererIfNeeded()",
	"WebCore::RenderLayer::updateLayerPositions(WebCore::RenderGeometryMap*)",
	"WebCore::RenderBlock::layoutBlock(bool, WebCore::LayoutUnit)",
	"WebCore::HTMLElement::setInnerHTML(WTF::String const&, int&)",
	"WTF::StringImpl::create(unsigned char const*, unsigned int)",
	"WTF::StringImpl::createUninitialized(unsigned int, unsigned char*&)",
	"WTF::HashTable::allocateTable(int)",
	"v8::internal::Heap::AllocateRaw(int, v8::internal::AllocationSpace)",
	"v8::internal::Factory::NewFixedArray(int, v8::internal::PretenureFlag)",
	"std::vector<int, std::allocator<int> >::reserve(unsigned long)",
	"std::_Rb_tree<int, int>::_M_insert_unique(int const&)",
	"RendererMain(content::MainFunctionParams const&)",
	"tcmalloc::SbrkSysAllocator::Alloc(unsigned long, unsigned long*, unsigned long)",
};

static const char *const spaces[] = {
	"WebCore", "WebCore", "WebCore", "WTF", "v8::internal", "v8::internal",
	"WebKit", "base", "base", "content", "net", "cc", "gfx", "IPC",
	"std",
};

static const char *const classes[] = {
	"Document", "Element", "Node", "RenderObject", "Frame", "Page",
	"StyleResolver", "CSSParser", "Heap", "Isolate", "Compiler", "Parser",
	"MessageLoop", "Thread", "URLRequest", "LayerTreeHost", "Vector",
	"HashMap", "String", "Timer", "Widget", "Canvas", "Image", "Font",
};

static const char *const methods[] = {
	"create", "update", "layout", "paint", "append", "insert", "parse",
	"run", "dispatch", "allocate", "grow", "resize", "copy", "load",
	"notify", "compute", "build", "reset", "attach", "detach",
};

static const char *const alloc_sites[] = {
	"WTF::fastMalloc(unsigned long)",
	"operator new(unsigned long)",
	"WTF::fastZeroedMalloc(unsigned long)",
	"operator new[](unsigned long)",
};

int main(int argc, char **argv)
{
	const char *dir;
	char name[256];
	unsigned snaps, lines, buckets;
	uint64_t *addrs, *seen;
	FILE *f;

	if (argc != 5) {
		fprintf(stderr, "usage: gen_deep DIR SNAPSHOTS LINES BUCKETS\n");
		return 2;
	}
	dir = argv[1];
	snaps = (unsigned)strtoul(argv[2], NULL, 10);
	lines = (unsigned)strtoul(argv[3], NULL, 10);
	buckets = (unsigned)strtoul(argv[4], NULL, 10);
	if (!snaps || !lines || buckets < NMMAP * 2 || snaps > 9999 ||
	    lines > buckets) {
		fprintf(stderr, "gen_deep: bad sizes\n");
		return 2;
	}
	mkdir(dir, 0777);
	snprintf(name, sizeof(name), "%s/deep.01234.symmap", dir);
	mkdir(name, 0777);

	/* The binary: its functions (nm), its sections, its mappings. */
	f = create(dir, "deep.01234.symmap/chrome.nm");
	for (unsigned i = 0; i < NFUNCS; i++) {
		uint64_t a = TEXT_OFF + i * FUNC_SIZE;

		if (i >= 30 && i < 34)
			fprintf(f, "%016" PRIx64 " T %s\n", a,
				alloc_sites[i - 30]);
		else if (i < sizeof(special) / sizeof(special[0]))
			fprintf(f, "%016" PRIx64 " T %s\n", a, special[i]);
		else if (i < 200)
			fprintf(f, "%016" PRIx64 " T %s\n", a,
				alloc_sites[i % 4]);
		/* (Allocation sites: functions 30 to 33.) */
		else
			fprintf(f, "%016" PRIx64 " t %s::%s%u::%s%u(int)\n", a,
				spaces[below(sizeof(spaces) / sizeof(spaces[0]))],
				classes[below(sizeof(classes) / sizeof(classes[0]))],
				i % 97,
				methods[below(sizeof(methods) / sizeof(methods[0]))],
				i % 13);
	}
	done(f);
	f = create(dir, "deep.01234.symmap/chrome.readelf-e");
	fprintf(f, "ELF Header:\n  Type:                              DYN "
		   "(Shared object file)\n\nSection Headers:\n"
		   "  [Nr] Name              Type            Address          "
		   "Off    Size   ES Flg Lk Inf Al\n"
		   "  [ 0]                   NULL            0000000000000000 "
		   "000000 000000 00      0   0  0\n"
		   "  [ 1] .text             PROGBITS        %016llx %06llx "
		   "%06llx 00  AX  0   0 16\n"
		   "Key to Flags:\n",
		(unsigned long long)TEXT_OFF, (unsigned long long)TEXT_OFF,
		(unsigned long long)(NFUNCS * FUNC_SIZE));
	done(f);
	f = create(dir, "deep.01234.symmap/files.json");
	fprintf(f, "{\n  \"/opt/chrome/chrome\": {\n    \"nm\": {\"file\": "
		   "\"chrome.nm\", \"format\": \"bsd\", \"mangled\": false},\n"
		   "    \"readelf-e\": {\"file\": \"chrome.readelf-e\"}\n  }\n}\n");
	done(f);

	/*
	 * The VMAs: the binary, 20 libraries, the heap, 260 anonymous
	 * mappings (the hooked ones: mmap buckets), the stack.
	 */
	{
		struct vma {
			uint64_t start, end, off;
			const char *perm, *path;
			int hooked; /* 0 no, 1 all, 2 the first half */
		} v[320];
		int nv = 0;
		char libs[20][64];
		uint64_t at = 0x7f0000000000ULL;
		FILE *maps;

		v[nv++] = (struct vma){ TEXT_VMA, TEXT_VMA + TEXT_OFF +
						  NFUNCS * FUNC_SIZE,
					0, "r-xp", "/opt/chrome/chrome", 0 };
		v[nv++] = (struct vma){ v[0].end, v[0].end + 0x200000,
					v[0].end - TEXT_VMA, "rw-p",
					"/opt/chrome/chrome", 0 };
		v[nv++] = (struct vma){ 0x555600000000ULL, 0x555608000000ULL, 0,
					"rw-p", "[heap]", 0 };
		for (int i = 0; i < 260; i++) {
			uint64_t len = (1 + below(64)) * 16 * PAGE;

			v[nv++] = (struct vma){ at, at + len, 0, "rw-p", "",
						i % 5 == 0 ? 2 : i % 7 ? 1 : 0 };
			at += len + 16 * PAGE;
		}
		for (int i = 0; i < 20; i++) {
			snprintf(libs[i], sizeof(libs[i]),
				 "/usr/lib/x86_64-linux-gnu/libfake%d.so.1", i);
			v[nv++] = (struct vma){ at, at + 64 * PAGE, 0, "r-xp",
						libs[i], 0 };
			at += 64 * PAGE;
			v[nv++] = (struct vma){ at, at + 8 * PAGE, 64 * PAGE,
						"rw-p", libs[i], 0 };
			at += 8 * PAGE;
		}
		v[nv++] = (struct vma){ 0x7ffc00000000ULL, 0x7ffc00021000ULL, 0,
					"rw-p", "[stack]", 0 };

		maps = create(dir, "deep.01234.maps");
		for (int i = 0; i < nv; i++)
			fprintf(maps, "%" PRIx64 "-%" PRIx64 " %s %08" PRIx64
				      " 00:00 %d %s\n",
				v[i].start, v[i].end, v[i].perm, v[i].off,
				v[i].path[0] == '/' ? 1234 : 0, v[i].path);
		done(maps);
		snprintf(name, sizeof(name), "%s/deep.01234.maps", dir);
		{
			char to[4200];

			snprintf(to, sizeof(to),
				 "cp %s %s/deep.01234.symmap/maps", name, dir);
			if (system(to) != 0)
				return 1;
		}

		/* Return addresses in the binary's functions. */
		addrs = malloc(NADDRS * sizeof(*addrs));
		seen = calloc(buckets, sizeof(*seen));
		if (!addrs || !seen)
			return 1;
		for (unsigned i = 0; i < NADDRS; i++)
			addrs[i] = TEXT_VMA + TEXT_OFF +
				   (i < NALLOC ? 30 + i % 4 : below(NFUNCS)) *
					   FUNC_SIZE +
				   16 + below(FUNC_SIZE - 32);

		for (unsigned s = 0; s < snaps; s++) {
			unsigned lo = (unsigned)((uint64_t)buckets * s / snaps);
			unsigned hi = (unsigned)((uint64_t)buckets * (s + 1) /
						 snaps);
			int64_t np[5] = { 0 }, npv[5] = { 0 }, pm = 0, pmv = 0;
			int64_t cls[5] = { 0 }, clsv[5] = { 0 }, malloc_c = 0,
				malloc_v = 0;
			FILE *heap, *bk;
			char *body;
			size_t bodylen;
			FILE *mem;

			/* The buckets this snapshot brings. */
			snprintf(name, sizeof(name), "deep.01234.%04u.buckets",
				 s + 1);
			bk = create(dir, name);
			for (unsigned id = lo; id < hi; id++) {
				unsigned depth = 10 + (unsigned)below(21);
				uint64_t r = rng;

				/* A bucket's frames follow from its id. */
				rng = id * 0x9e3779b97f4a7c15ULL + 1;
				fprintf(bk, "%u %s", id,
					id < NMMAP ? "mmap" : "malloc");
				/* (tcmalloc's arenas: the first mmap ones.) */
				for (unsigned k = 0; k < depth; k++)
					fprintf(bk, " 0x%012" PRIx64,
						(uint64_t)(k == 0 && id < 100
							? TEXT_VMA + TEXT_OFF +
								  29 * FUNC_SIZE + 40
						: k == 0 ? addrs[below(NALLOC)]
							 : addrs[below(NADDRS)]));
				fputc('\n', bk);
				rng = r;
			}
			done(bk);

			mem = open_memstream(&body, &bodylen);
			fprintf(mem, "MMAP_LIST:\n");
			for (int i = 0; i < nv; i++) {
				uint64_t len = v[i].end - v[i].start;
				uint64_t c = v[i].path[0] == '/'
						     ? len / 2 / PAGE * PAGE
						     : (1 + below(len / PAGE)) *
							       PAGE;
				int k = !strcmp(v[i].path, "[stack]") ? 3
					: v[i].path[0] == '/'
						? (v[i].perm[2] == 'x' ? 0 : 1)
					: v[i].path[0] ? 4
						       : 2;

				fprintf(mem, "%" PRIx64 "-%" PRIx64 " %s %08"
					     PRIx64 " 00:00 %d %s\n",
					v[i].start, v[i].end, v[i].perm,
					v[i].off, v[i].path[0] == '/' ? 1234 : 0,
					v[i].path);
				cls[k] += (int64_t)c;
				clsv[k] += (int64_t)len;
				if (!v[i].hooked) {
					fprintf(mem, "  %" PRIx64 " - %" PRIx64
						     "  unhooked %" PRIu64
						     " / %" PRIu64 "\n",
						v[i].start, v[i].end, c, len);
					np[k] += (int64_t)c;
					npv[k] += (int64_t)len;
				} else if (v[i].hooked == 1) {
					fprintf(mem, "  %" PRIx64 " - %" PRIx64
						     "  hooked %" PRIu64 " / %"
						     PRIu64 " @ %u\n",
						v[i].start, v[i].end, c, len,
						(unsigned)(i % 100));
					pm += (int64_t)c;
					pmv += (int64_t)len;
				} else {
					uint64_t mid = v[i].start + len / 2 /
								    PAGE * PAGE;
					uint64_t c1 = c / 2 / PAGE * PAGE;

					fprintf(mem, "  %" PRIx64 " - %" PRIx64
						     "  hooked %" PRIu64 " / %"
						     PRIu64 " @ %u\n",
						v[i].start, mid, c1,
						mid - v[i].start,
						(unsigned)(i % 100));
					fprintf(mem, "  %" PRIx64 " - %" PRIx64
						     "  unhooked %" PRIu64
						     " / %" PRIu64 "\n",
						mid, v[i].end, c - c1,
						v[i].end - mid);
					pm += (int64_t)c1;
					pmv += (int64_t)(mid - v[i].start);
					np[k] += (int64_t)(c - c1);
					npv[k] += (int64_t)(v[i].end - mid);
				}
			}
			fclose(mem);

			snprintf(name, sizeof(name), "deep.01234.%04u.heap",
				 s + 1);
			heap = create(dir, name);
			fprintf(heap, "heap profile: DUMP_DEEP_6\nMETA:\n"
				      "Time: %u\nReason: bench\nRunID: bench-"
				      "linux-1234-1700000000\nPageSize: 4096\n",
				1700000000 + s * 10);
			fwrite(body, 1, bodylen, heap);
			free(body);

			/* The stack lines, then what they add up to. */
			mem = open_memstream(&body, &bodylen);
			fprintf(mem, "STACKTRACES:\n   virtual  committed\n");
			for (unsigned n = 0; n < lines; n++) {
				unsigned id = n < hi - lo
						      ? lo + n
						      : (unsigned)below(hi);
				int64_t virt = 16 * (1 + (int64_t)below(64));
				int64_t comm = virt - 16 * (int64_t)below(
							     (uint64_t)virt / 32 + 1);
				int64_t allocs = 1 + (int64_t)below(1000);

				if (seen[id] == s + 1) /* once a snapshot */
					continue;
				seen[id] = s + 1;
				if (id >= NMMAP) {
					malloc_v += virt;
					malloc_c += comm;
				}
				fprintf(mem, "%10" PRId64 " %10" PRId64
					     " %6" PRId64 " %6" PRId64
					     " @ %u\n",
					virt, comm, allocs,
					allocs - (int64_t)below((uint64_t)allocs),
					id);
			}
			fclose(mem);
			{
				int64_t npt = 0, nptv = 0, tot = 0, totv = 0;
				static const char *const nps[] = {
					"nonprofiled-file-exec",
					"nonprofiled-file-nonexec",
					"nonprofiled-anonymous",
					"nonprofiled-stack", "nonprofiled-other",
				};
				static const char *const cn[] = {
					"file-exec", "file-nonexec", "anonymous",
					"stack", "other",
				};

				for (int k = 0; k < 5; k++) {
					npt += np[k];
					nptv += npv[k];
					tot += cls[k];
					totv += clsv[k];
				}
				fprintf(heap, "GLOBAL_STATS:\n%25s %12s %12s\n",
					"", "virtual", "committed");
				fprintf(heap, "%25s %12" PRId64 " %12" PRId64 "\n",
					"total", totv, tot);
				fprintf(heap, "%25s %12d %12d\n", "absent", 0, 0);
				for (int k = 0; k < 5; k++)
					fprintf(heap,
						"%25s %12" PRId64 " %12" PRId64 "\n",
						cn[k], clsv[k], cls[k]);
				fprintf(heap, "%25s %12" PRId64 " %12" PRId64 "\n",
					"nonprofiled-total", nptv, npt);
				fprintf(heap, "%25s %12d %12d\n",
					"nonprofiled-absent", 0, 0);
				for (int k = 0; k < 5; k++)
					fprintf(heap,
						"%25s %12" PRId64 " %12" PRId64 "\n",
						nps[k], npv[k], np[k]);
				fprintf(heap, "%25s %12" PRId64 " %12" PRId64 "\n",
					"profiled-mmap", pmv, pm);
				fprintf(heap, "%25s %12" PRId64 " %12" PRId64 "\n",
					"profiled-malloc", malloc_v, malloc_c);
			}
			fwrite(body, 1, bodylen, heap);
			free(body);
			done(heap);
		}
	}
	free(addrs);
	free(seen);
	return 0;
}
