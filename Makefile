# dmprof: one hand-written Makefile.
#
#   make            build ./dmprof and the recorder, ./libdmprof-recorder.so
#   make demo       install missing Debian packages, build, record README's
#                   C++ server and a Python program, run on them and samples/
#   make check      install missing Debian packages, build, run every test,
#                   then the whole suite again under ASan+UBSan
#   make bench      speed against baselines (see tests/bench/)
#   make fuzz       every parser under libFuzzer, FUZZ_SECONDS (60) each
#   make install    PREFIX=/usr/local DESTDIR= (and BINDIR, DATADIR, LIBDIR,
#                   MANDIR under it)
#   make uninstall  the same variables: removes what install put there
#   make deb        a Debian package, dmprof_VERSION-1_ARCH.deb (lintian-clean)
#   make clean
#
# CC, CFLAGS, CPPFLAGS, LDFLAGS and PREFIX may be overridden.  WERROR=1 turns
# warnings into errors (CI does this).

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share/dmprof
LIBDIR ?= $(PREFIX)/lib/dmprof
MANDIR ?= $(PREFIX)/share/man
DESTDIR ?=

CFLAGS ?= -O2 -g
O ?= build

# Debian packages: to build, and to run the tests.
BUILD_DEPS = libpcre2-dev binutils-dev libcsv-dev libcriterion-dev \
	     libdebuginfod-dev libdeflate-dev pkg-config
TEST_DEPS = gcc g++ diffutils libgoogle-perftools4 google-perftools libc6-dbg \
	    python3-dev \
	    python3 sqlite3 chromium zstd ruby nodejs debuginfod gdb \
	    golang-go valgrind libjemalloc2 libjemalloc-dev dpkg-dev lintian \
	    libglib2.0-dev redis-server redis-tools
BENCH_DEPS = libllvm14 llvm binutils time bc heaptrack g++ \
	     libgoogle-perftools4 pdns-recursor
FUZZ_DEPS = clang libclang-rt-14-dev
DEPS = $(BUILD_DEPS) $(TEST_DEPS)

WARNINGS = -Wall -Wextra -Wshadow -Wpointer-arith -Wstrict-prototypes \
	   -Wmissing-prototypes -Wformat=2 -Wvla -Wundef -Wcast-align \
	   -Wno-format-nonliteral
ifeq ($(WERROR),1)
WARNINGS += -Werror
endif

ifeq ($(SANITIZE),thread)
# ThreadSanitizer, for the threads suite and the recorder's stress test.
# Its runtime claims malloc too: the recorder's test build (REC_TSAN)
# hands the program's blocks to it instead of to glibc.
O = build/tsan
SANFLAGS = -fsanitize=thread -fno-omit-frame-pointer
REC_SANFLAGS = -fsanitize=thread -DREC_TSAN
BIN = $(O)/dmprof
RECORDER = $(O)/libdmprof-recorder.so
else ifeq ($(SANITIZE),1)
O = build/asan
SANFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=all \
	   -fno-omit-frame-pointer
# The recorder runs inside other programs, where ASan cannot: it gets
# UBSan checks that trap, which need no runtime.
REC_SANFLAGS = -fsanitize=undefined -fsanitize-undefined-trap-on-error
BIN = $(O)/dmprof
RECORDER = $(O)/libdmprof-recorder.so
export LSAN_OPTIONS := suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0
else
BIN = dmprof
RECORDER = libdmprof-recorder.so
endif
# dmprof's hook for node, beside the recorder, where dmprof record looks.
NODE_HOOK = $(dir $(RECORDER))dmprof-node.js

ALL_CPPFLAGS = -Iinclude -D_GNU_SOURCE $(CPPFLAGS)
ALL_CFLAGS = -std=gnu11 $(WARNINGS) $(SANFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(SANFLAGS) $(LDFLAGS)
# (libdebuginfod is loaded when DEBUGINFOD_URLS asks for it: see symbfd.c.)
LIBS = $(shell pkg-config --libs libpcre2-8 2>/dev/null || echo -lpcre2-8) \
       -lbfd -lcsv -ldeflate -lm

# src/ by pipeline stage: core helpers, the model, the file formats'
# readers, process memory (live processes and cores, the allocators'
# walkers), symbolization, loading a run, policies, classification and
# aggregation, the command line; the recorder is a library of its own.
STAGES = core model read memory symbol load policy analyze cli
LIB_SRCS := $(filter-out src/cli/dmprof.c,$(foreach s,$(STAGES),$(wildcard src/$(s)/*.c)))
LIB_OBJS := $(LIB_SRCS:src/%.c=$(O)/%.o) $(O)/cli/page-html.o
REC_SRCS := $(filter-out $(if $(filter thread,$(SANITIZE)),,src/recorder/rec_tsan.c), \
	    $(wildcard src/recorder/*.c))
REC_OBJS := $(REC_SRCS:src/%.c=$(O)/%.o)
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_OBJS := $(UNIT_SRCS:tests/unit/%.c=$(O)/unit/%.o)

SHARED ?= $(abspath ../shared)

.PHONY: all deps demo check test bench fuzz install uninstall deb clean FORCE

all: $(BIN) $(RECORDER) $(NODE_HOOK)

$(BIN): $(O)/cli/dmprof.o $(O)/libdmprof.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(O)/libdmprof.a: $(LIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

$(O)/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(PATH_FLAGS) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# dmprof html's page, src/cli/page.html, as one C string.
PAGE_C = build/gen/page-html.c
$(PAGE_C): src/cli/page.html
	@mkdir -p $(@D)
	{ echo '/* Made from src/cli/page.html by the Makefile. */'; \
	  echo 'extern const char page_html[];'; \
	  echo 'const char page_html[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/	"/' -e 's/$$/\\n"/' $<; \
	  echo '	;'; } >$@
$(O)/cli/page-html.o: $(PAGE_C)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

# Where the installed policies and recorder are: seen by src/core/paths.c
# only, and tracked like a header (git's GIT-PREFIX), so that a new
# PREFIX (make install PREFIX=...) rebuilds that one object.  (An
# installed dmprof looks beside itself first, so moving it works too.)
$(O)/core/paths.o: PATH_FLAGS = -DDMPROF_DATADIR='"$(DATADIR)"' \
				 -DDMPROF_LIBDIR='"$(LIBDIR)"'
$(O)/core/paths.o: $(O)/PATHS
$(O)/PATHS: FORCE
	@mkdir -p $(@D)
	@printf '%s\n' 'DATADIR=$(DATADIR)' 'LIBDIR=$(LIBDIR)' >$@.new
	@if cmp -s $@.new $@; then rm $@.new; else mv $@.new $@; fi

# The recorder: a preload library, hidden but for the functions it hooks.
# (The more specific pattern wins over the one above.)  Optimized across
# its files where no sanitizer is on: a Python program's every object
# goes through three of them (5% of its run time under record).  The
# objects keep their plain code too, for the unit tests.
ifeq ($(SANITIZE),)
REC_LTO = -flto=auto -ffat-lto-objects
endif
$(O)/recorder/%.o: src/recorder/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) -std=gnu11 $(WARNINGS) $(REC_SANFLAGS) $(CFLAGS) \
		-fPIC -fvisibility=hidden -ftls-model=initial-exec -pthread \
		$(REC_LTO) -MMD -MP -c -o $@ $<

# (The test build's entry points run before ThreadSanitizer's runtime has
# started: they are not instrumented.)
$(O)/recorder/rec_tsan.o: REC_SANFLAGS = -DREC_TSAN

$(RECORDER): $(REC_OBJS)
	$(CC) -shared -pthread $(REC_SANFLAGS) $(REC_LTO) $(CFLAGS) $(LDFLAGS) -Wl,-z,defs \
		-Wl,-z,now -o $@ $^ -ldl

$(NODE_HOOK): src/recorder/dmprof-node.js
	cp $< $@

$(O)/unit/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# The recorder's table of stacks with room for 16,384 of them, not four
# million: its test fills it (tests/unit/test_rectable.c).
$(O)/unit/rec_table_small.o: src/recorder/rec_table.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -pthread -DREC_MAX_BUCKETS=16384 \
		-MMD -MP -c -o $@ $<

# (The recorder's unwinder is tested against glibc's backtrace().)
$(O)/unit-tests: $(UNIT_OBJS) $(O)/libdmprof.a $(O)/recorder/rec_unwind.o \
		 $(O)/recorder/rec_pyframes.o $(O)/recorder/rec_perfmap.o \
		 $(O)/recorder/rec_mem.o $(O)/recorder/rec_unwind_saved.o \
		 $(O)/unit/rec_table_small.o
	$(CC) $(ALL_LDFLAGS) -pthread -o $@ $^ -lcriterion $(LIBS)

-include $(wildcard $(O)/*/*.d)

# Install what is missing with apt-get (through sudo unless root).  Only on
# Debian-like systems; elsewhere say what is needed and go on.
deps bench-deps fuzz-deps: DEPS += $(if $(filter bench-deps,$@),$(BENCH_DEPS)) \
	$(if $(filter fuzz-deps,$@),$(FUZZ_DEPS))
deps bench-deps fuzz-deps:
	@if ! command -v dpkg-query >/dev/null 2>&1; then \
		echo "deps: not a Debian system; make sure these are installed: $(DEPS)"; \
		exit 0; \
	fi; \
	missing=; \
	for p in $(DEPS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
			grep -q '^install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "deps: installing$$missing"; \
		if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
		export DEBIAN_FRONTEND=noninteractive; \
		$$sudo apt-get install -y --no-install-recommends $$missing || \
		{ $$sudo apt-get update && \
		  $$sudo apt-get install -y --no-install-recommends $$missing; } || \
		{ echo "deps: could not install$$missing" >&2; exit 1; }; \
	fi

demo: deps
	$(MAKE) all
	@sh samples/demo.sh ./dmprof

# The whole suite, then again under the sanitizers (and the install test
# once), then the verdict: its last line is "N passed, N failed".
check: deps
	@rm -f build/results build/asan/results build/tsan/results \
		build/results.failed build/asan/results.failed build/tsan/results.failed
	@$(MAKE) --no-print-directory test || :
	@$(MAKE) --no-print-directory SANITIZE=1 test || :
	@$(MAKE) --no-print-directory SANITIZE=thread test || :
	@sh tests/verdict.sh build/results build/asan/results build/tsan/results

# Every suite on this build; with SANITIZE=1, not the install test (it
# builds and installs a tree of its own).
SUITES = $(if $(filter thread,$(SANITIZE)),threads recorder,unit golden compat \
	 real recorder hostile browser threads \
	 $(if $(filter 1,$(SANITIZE)),,install))
test: $(BIN) $(RECORDER) $(NODE_HOOK) $(if $(filter thread,$(SANITIZE)),,$(O)/unit-tests)
	@sh tests/suites.sh $(if $(filter 1,$(SANITIZE)),asan,$(if \
		$(filter thread,$(SANITIZE)),tsan,plain)) $(BIN) \
		$(O)/unit-tests $(SHARED) $(O)/results $(SUITES)

# Speed against baselines measured in the same run (see tests/bench/).
bench: bench-deps
	$(MAKE) all
	sh tests/bench/run.sh ./dmprof

# Fuzzing: clang's libFuzzer with ASan+UBSan, one binary per parser: one
# per row of the readers' table, by the name the row gives (the sed takes
# the rows' ".format = FORMAT_X, .name = "x"": test_profile.c checks that
# it finds every row), then the other parsers.
FUZZ_SECONDS ?= 60
FUZZ_READERS := $(shell sed -n 's/.*\.format = FORMAT_[A-Z]*, \.name = "\([a-z0-9]*\)".*/\1/p' \
	src/load/profile.c)
FUZZ_TARGETS = $(FUZZ_READERS) buckets maps symmap policy json symcache dwarf
FUZZ_O = build/fuzz
FUZZ_CC = clang
FUZZ_FLAGS = -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_LIB_OBJS := $(LIB_SRCS:src/%.c=$(FUZZ_O)/%.o) $(FUZZ_O)/cli/page-html.o
# (Built by a pattern rule for the targets: keep them between runs.)
.SECONDARY: $(FUZZ_LIB_OBJS)

$(FUZZ_O)/%.o: src/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(ALL_CPPFLAGS) -std=gnu11 $(FUZZ_FLAGS) \
		-fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<
$(FUZZ_O)/cli/page-html.o: $(PAGE_C)
	@mkdir -p $(@D)
	$(FUZZ_CC) -c -o $@ $<

$(FUZZ_O)/fuzz_%: tests/fuzz/fuzz.c $(FUZZ_LIB_OBJS)
	$(FUZZ_CC) $(ALL_CPPFLAGS) -std=gnu11 $(FUZZ_FLAGS) -fsanitize=fuzzer \
		$(if $(filter $*,$(FUZZ_READERS)),-DFUZZ_READER='"$*"', \
		-DFUZZ_$(shell echo $* | tr a-z A-Z)) -o $@ $< \
		$(FUZZ_LIB_OBJS) $(LIBS)
# (Rebuilt when a header changes, as the other objects are.)
-include $(wildcard $(FUZZ_O)/*/*.d)

fuzz: fuzz-deps
	$(MAKE) $(FUZZ_TARGETS:%=$(FUZZ_O)/fuzz_%)
	sh tests/fuzz/run.sh $(FUZZ_O) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

POLICY_FILES = index $(notdir $(wildcard policies/*.policy))

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(DATADIR)/policies \
		$(DESTDIR)$(LIBDIR)
	install -m 755 dmprof $(DESTDIR)$(BINDIR)/dmprof
	install -m 644 libdmprof-recorder.so dmprof-node.js $(DESTDIR)$(LIBDIR)/
	install -m 644 man/dmprof.1 $(DESTDIR)$(MANDIR)/man1/dmprof.1
	install -m 644 man/dmprof-policy.5 $(DESTDIR)$(MANDIR)/man5/dmprof-policy.5
	install -m 644 $(addprefix policies/,$(POLICY_FILES)) \
		$(DESTDIR)$(DATADIR)/policies/

# Exactly what install put there, and dmprof's own directories if that
# leaves them empty.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/dmprof \
		$(DESTDIR)$(LIBDIR)/libdmprof-recorder.so \
		$(DESTDIR)$(LIBDIR)/dmprof-node.js \
		$(DESTDIR)$(MANDIR)/man1/dmprof.1 \
		$(DESTDIR)$(MANDIR)/man5/dmprof-policy.5 \
		$(addprefix $(DESTDIR)$(DATADIR)/policies/,$(POLICY_FILES))
	rmdir $(DESTDIR)$(DATADIR)/policies $(DESTDIR)$(DATADIR) \
		$(DESTDIR)$(LIBDIR) 2>/dev/null || :

# A Debian package of what install puts under /usr, built from a staged
# install under build/deb as debhelper would lay it out (debian/dmprof,
# beside a stand-in debian/control that dpkg-shlibdeps wants): stripped,
# man pages gzip -9n, a copyright pointing at common-licenses, Depends
# computed by dpkg-shlibdeps, then lintian, which must find no error.
# The version is dmprof -V's plus a Debian revision, so the changelog is
# changelog.Debian.gz.  DEB_MAINTAINER, DEB_REVISION and LINTIAN (empty:
# none) may be set; SOURCE_DATE_EPOCH (else the last commit's) dates it.
DEB_DEPS = dpkg-dev binutils lintian
DEB_REVISION ?= 1
DEB_VERSION = $(shell sed -n 's/.*DMPROF_VERSION "\(.*\)".*/\1/p' \
		include/util.h)-$(DEB_REVISION)
DEB_ARCH = $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB_FILE = dmprof_$(DEB_VERSION)_$(DEB_ARCH).deb
DEB_MAINTAINER ?= $(shell git config user.name) <$(shell git config user.email)>
DEB_EPOCH = $(or $(SOURCE_DATE_EPOCH),$(shell git log -1 --format=%ct \
		2>/dev/null),$(shell date +%s))
DEB_SUMMARY = memory profiler: who holds a process's memory, and how it grew
LINTIAN ?= lintian
DEB_TOP = build/deb
DEB_ROOT = $(DEB_TOP)/debian/dmprof
DEB_DOC = $(DEB_ROOT)/usr/share/doc/dmprof

.PHONY: deb-deps
deb-deps:
	@$(MAKE) --no-print-directory deps DEPS="$(DEB_DEPS)"

deb: deb-deps
	@case '$(DEB_VERSION)' in [0-9]*) ;; *) \
		echo "deb: no DMPROF_VERSION in include/util.h" >&2; exit 1;; esac
	@case '$(DEB_MAINTAINER)' in ?*' <'?*@?*'>') ;; *) \
		echo "deb: no maintainer: set DEB_MAINTAINER='Name <email>'" \
		     "(or git config user.name and user.email)" >&2; exit 1;; esac
	rm -rf $(DEB_TOP) $(DEB_FILE)
	$(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/$(DEB_ROOT) \
		PREFIX=/usr BINDIR=/usr/bin DATADIR=/usr/share/dmprof \
		LIBDIR=/usr/lib/dmprof MANDIR=/usr/share/man
	strip --remove-section=.comment --remove-section=.note \
		$(DEB_ROOT)/usr/bin/dmprof
	strip --remove-section=.comment --remove-section=.note \
		--strip-unneeded $(DEB_ROOT)/usr/lib/dmprof/libdmprof-recorder.so
	gzip -9n $(DEB_ROOT)/usr/share/man/man1/dmprof.1 \
		$(DEB_ROOT)/usr/share/man/man5/dmprof-policy.5
	install -d -m 755 $(DEB_DOC) $(DEB_ROOT)/DEBIAN
	@grep -q 'GNU GENERAL PUBLIC LICENSE' LICENSE && \
	 grep -q 'Version 3, 29 June 2007' LICENSE || \
	 { echo "deb: LICENSE is not the GPL version 3: fix the copyright" >&2; \
	   exit 1; }
	printf '%s\n' \
	  'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' \
	  'Upstream-Name: dmprof' '' 'Files: *' \
	  "Copyright: $$(date -u -d @$(DEB_EPOCH) +%Y) the dmprof authors" \
	  'License: GPL-3+' \
	  ' dmprof links against libbfd, which is GPLv3+, so dmprof is distributed' \
	  ' under the GNU General Public License, version 3 or later.' ' .' \
	  ' On Debian systems, the complete text of the GNU General Public License' \
	  ' version 3 can be found in "/usr/share/common-licenses/GPL-3".' \
		>$(DEB_DOC)/copyright
	{ echo 'dmprof ($(DEB_VERSION)) unstable; urgency=medium'; echo; \
	  echo '  * Built from the source tree by make deb.'; echo; \
	  echo " -- $(DEB_MAINTAINER)  $$(LC_ALL=C date -u -R -d @$(DEB_EPOCH))"; } | \
		gzip -9n >$(DEB_DOC)/changelog.Debian.gz
	chmod 644 $(DEB_DOC)/copyright $(DEB_DOC)/changelog.Debian.gz
	printf 'Source: dmprof\n\nPackage: dmprof\nArchitecture: any\n' \
		>$(DEB_TOP)/debian/control
	deps=$$(cd $(DEB_TOP) && dpkg-shlibdeps -O \
		-edebian/dmprof/usr/bin/dmprof \
		-edebian/dmprof/usr/lib/dmprof/libdmprof-recorder.so | \
		sed -n 's/^shlibs:Depends=//p') && [ -n "$$deps" ] && \
	size=$$(du -s -k --apparent-size --exclude=DEBIAN $(DEB_ROOT) | cut -f1) && \
	printf '%s\n' 'Package: dmprof' 'Version: $(DEB_VERSION)' \
	  'Architecture: $(DEB_ARCH)' 'Maintainer: $(DEB_MAINTAINER)' \
	  "Installed-Size: $$size" "Depends: $$deps" \
	  'Section: devel' 'Priority: optional' \
	  "Description: $(DEB_SUMMARY)" \
	  ' dmprof records a series of heap dumps of a dynamically linked program' \
	  ' (through a preloaded recorder library), joins each with the memory map,' \
	  ' symbolizes the allocation stacks and classifies every byte into named' \
	  ' components with regex policies.  It answers what is big (top), what' \
	  ' grew and which stacks did it (diff), all of it in one HTML page (html),' \
	  ' and the time series to chart (csv).  A revival of Chromium'"'"'s Deep' \
	  ' Memory Profiler.' >$(DEB_ROOT)/DEBIAN/control
	cd $(DEB_ROOT) && find . -path ./DEBIAN -prune -o -type f -printf '%P\n' | \
		LC_ALL=C sort | xargs md5sum >DEBIAN/md5sums
	chmod 644 $(DEB_ROOT)/DEBIAN/control $(DEB_ROOT)/DEBIAN/md5sums
	SOURCE_DATE_EPOCH=$(DEB_EPOCH) dpkg-deb --root-owner-group \
		--build $(DEB_ROOT) $(DEB_FILE)
	$(if $(LINTIAN),$(LINTIAN) --fail-on error $(DEB_FILE))

clean:
	rm -rf build dmprof libdmprof-recorder.so dmprof-node.js dmprof_*.deb
