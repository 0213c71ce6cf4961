# The Debian package, sourced by tests/install/run.sh in its copy of the
# tree (with its $tmp, $tmp/in.txt, ok and bad):
#   make deb                   builds dmprof_VERSION-1_ARCH.deb, which
#                              lintian (when installed) finds no error in;
#   dpkg-deb -c, -f            its files in their Debian places, owned by
#                              root, the man pages gzipped; its version is
#                              dmprof -V's and its Depends computed;
#   dpkg-deb -x ROOT           not installed: extracted, the dmprof in it
#                              records sort and reads the dumps from /, with
#                              the recorder and policies beside it (the
#                              /usr paths built in are not there).
# Skips, saying so, without dpkg-deb and dpkg-shlibdeps.
deb_test() {
	for need in dpkg-deb dpkg-shlibdeps strip gzip; do
		if ! command -v $need >/dev/null 2>&1; then
			echo "deb: SKIP: $need is not installed (make deb-deps installs it)"
			return 0
		fi
	done
	lint=lintian
	if ! command -v lintian >/dev/null 2>&1; then
		echo "deb: lintian is not installed: the package is not linted"
		lint=
	fi
	# (The test installs nothing: DEB_DEPS is empty.)
	make -s deb DEB_DEPS= LINTIAN="$lint" \
		DEB_MAINTAINER='dmprof tests <dmprof-tests@example.org>' \
		>deb.log 2>&1
	rc=$?
	deb=$(ls dmprof_*.deb 2>/dev/null)
	if [ $rc != 0 ] || [ "$(echo "$deb" | wc -w)" != 1 ]; then
		bad "make deb: $(grep -v '^running with root' deb.log | tail -5)"
		return
	fi
	ok
	if [ -n "$lint" ]; then
		# (--fail-on error failed make deb on an error; say what else.)
		grep -q '^E: ' deb.log && bad "lintian: $(grep '^E: ' deb.log)" || ok
		grep '^W: ' deb.log | sed 's/^/deb: lintian: /'
	fi

	# The files, in their Debian places, and nothing else.
	{
		for f in usr/bin/dmprof usr/lib/dmprof/libdmprof-recorder.so \
			usr/lib/dmprof/dmprof-node.js \
			usr/share/man/man1/dmprof.1.gz \
			usr/share/man/man5/dmprof-policy.5.gz \
			usr/share/doc/dmprof/copyright \
			usr/share/doc/dmprof/changelog.Debian.gz \
			usr/share/dmprof/policies/index; do
			echo "./$f"
		done
		for f in policies/*.policy; do
			echo "./usr/share/dmprof/$f"
		done
	} | LC_ALL=C sort >"$tmp/deb.want"
	dpkg-deb -c "$deb" >"$tmp/deb.list" 2>&1
	awk '/^-/ { print $6 }' "$tmp/deb.list" | LC_ALL=C sort >"$tmp/deb.files"
	if cmp -s "$tmp/deb.want" "$tmp/deb.files"; then ok; else
		bad "dpkg-deb -c: not the files wanted: $(diff "$tmp/deb.want" "$tmp/deb.files" | grep '^[<>]' | tr '\n' ' ')"
	fi
	grep -v ' root/root ' "$tmp/deb.list" | grep -q . &&
		bad "dpkg-deb -c: not all owned by root: $(grep -v ' root/root ' "$tmp/deb.list" | head -2)" || ok
	grep -q '^-rwxr-xr-x .* \./usr/bin/dmprof$' "$tmp/deb.list" &&
		grep -q '^-rw-r--r-- .* \./usr/lib/dmprof/libdmprof-recorder\.so$' "$tmp/deb.list" &&
		ok || bad "dpkg-deb -c: modes: $(grep 'dmprof$\|\.so$' "$tmp/deb.list")"

	# The control: dmprof -V's version, this machine's architecture, and
	# a Depends that dpkg-shlibdeps computed from what dmprof links.
	want="$(./dmprof -V | sed 's/^dmprof //')-1 $(dpkg --print-architecture)"
	got="$(dpkg-deb -f "$deb" Version) $(dpkg-deb -f "$deb" Architecture)"
	[ "$(dpkg-deb -f "$deb" Package)" = dmprof ] && [ "$got" = "$want" ] &&
		ok || bad "control: version and architecture '$got', not '$want'"
	depends=$(dpkg-deb -f "$deb" Depends)
	missing=
	for p in libc6 libbinutils libpcre2-8-0 libcsv3 libdeflate0; do
		echo ", $depends" | grep -q ", $p \|, $p\$" || missing="$missing $p"
	done
	[ -z "$missing" ] && ok || bad "control: Depends has not$missing: '$depends'"
	# One DEFLATE library: libdeflate, not zlib too.
	echo ", $depends" | grep -q ", zlib1g \|, zlib1g\$" &&
		bad "control: Depends has zlib1g: '$depends'" || ok

	# Extracted, not installed.
	root=$tmp/debroot
	mkdir "$root"
	if ! dpkg-deb -x "$deb" "$root" 2>"$tmp/x.err"; then
		bad "dpkg-deb -x: $(head -3 "$tmp/x.err")"
		return
	fi
	real=$(cd "$root" && pwd -P)
	for m in man1/dmprof.1 man5/dmprof-policy.5; do
		gzip -dc "$root/usr/share/man/$m.gz" 2>/dev/null |
			cmp -s - "man/${m#*/}" || { bad "$m.gz is not man/${m#*/} gzipped"; continue; }
		ok
	done
	dm=$root/usr/bin/dmprof
	rm -rf "$tmp/debrec"
	(cd / && "$dm" record -o "$tmp/debrec/" -i 0 -- sort "$tmp/in.txt") \
		>"$tmp/rec.out" 2>"$tmp/rec.err"
	if [ $? = 0 ] && [ "$(cat "$tmp/rec.out")" = "$(printf 'a\nb')" ] &&
	   ls "$tmp"/debrec/sort.*.0001.heap >/dev/null 2>&1; then ok; else
		bad "extracted: record failed: $(head -3 "$tmp/rec.err")"
		return
	fi
	first=$(ls "$tmp"/debrec/sort.*.0001.heap | head -1)
	(cd / && "$dm" top "$first") >"$tmp/top.out" 2>"$tmp/top.err"
	if [ $? = 0 ] && grep -q ' in the components of policy linux ' "$tmp/top.out"; then
		ok; else bad "extracted: top failed: $(head -3 "$tmp/top.err")"
	fi
	# What it found is its own, beside it, not anything under /usr.
	(cd / && "$dm" policy list) >"$tmp/pol.out" 2>&1
	grep -q "^linux  *$real/usr/share/dmprof/policies/linux\.policy  *(default)\$" \
		"$tmp/pol.out" && ok ||
		bad "extracted: policy list does not find the package's policies: $(head -3 "$tmp/pol.out")"
	pre=$(cd / && "$dm" record -o "$tmp/debenv/" -i 0 -- printenv LD_PRELOAD 2>"$tmp/env.err")
	pre=$(realpath "${pre%%:*}" 2>/dev/null)
	[ "$pre" = "$real/usr/lib/dmprof/libdmprof-recorder.so" ] && ok ||
		bad "extracted: record preloads '$pre', not the package's recorder: $(head -2 "$tmp/env.err")"
}
deb_test
