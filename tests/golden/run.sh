#!/bin/sh
# Golden end-to-end tests.  Each directory tests/golden/CASE/ holds:
#   cmd               shell commands, run with bash in a scratch copy of
#                     CASE/, with `dmprof` on PATH being the binary under
#                     test
#   expected.stdout   exact expected standard output (absent: must be empty)
#   expected.stderr   exact expected standard error (absent: must be empty)
#   expected.status   expected exit status of cmd (absent: 0)
#   expected.statuses every command of cmd that does not exit 0, a line
#                     each, sorted: "STATUS SUBCOMMAND" for dmprof's
#                     (commands of a pipe end in any order), "STATUS sh:
#                     COMMAND" for any other (bash's ERR trap: not in a
#                     condition, nor inside a function or a subshell, nor
#                     a pipe's but the last).  Absent: every one exits 0.
#                     So a failing command in the middle of a pipe or a
#                     script is seen, whatever comes after it.
# Inputs live beside cmd.  The environment is clean: LC_ALL=C, TZ=UTC.
# Whatever a case does with its standard error, a sanitizer's report
# fails it: the sanitizers write their reports to files here
# (log_path), which must stay empty, and a report in the standard error
# kept is one too, even if expected.
# Usage: tests/golden/run.sh DMPROF_BINARY [CASE...]
# Updating goldens is deliberate: GOLDEN_UPDATE=1 rewrites expected files.

set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmprof-golden.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/bin" "$tmp/san"
# `dmprof` on PATH: the binary, its status noted for every command.
cat >"$tmp/bin/dmprof" <<EOF
#!/bin/sh
"$bin" "\$@"
rc=\$?
[ \$rc = 0 ] || printf '%s %s\n' \$rc "\${1:-}" >>"$tmp/statuses.raw"
exit \$rc
EOF
chmod +x "$tmp/bin/dmprof"
# The case's commands, with each other command that fails noted too, as
# "STATUS sh: COMMAND" (bash's ERR trap: not a condition's, nor inside a
# function, a subshell or a pipe but its end; the status it keeps).
cat >"$tmp/cmd" <<'EOF'
golden_failed() {
	case $2 in dmprof | dmprof\ * | '. ./cmd') ;;
	*) printf '%s sh: %s\n' "$1" "$2" >>"$GOLDEN_RAW" ;;
	esac
}
trap 'golden_failed $? "$BASH_COMMAND"' ERR
. ./cmd
EOF
san="log_path=$tmp/san/report"
sanitizer='ERROR: \(Address\|Leak\|Thread\)Sanitizer\|WARNING: ThreadSanitizer\|: runtime error: '

if [ $# -gt 0 ]; then cases=$*; else cases=$(cd "$here" && ls -d */ | tr -d /); fi
pass=0 fail=0
for c in $cases; do
	src=$here/$c
	[ -f "$src/cmd" ] || continue
	work=$tmp/work/$c
	mkdir -p "$work"
	cp -R "$src/." "$work/"
	# (What is expected is not the case's to see.)
	rm -f "$work"/expected.*
	rm -f "$tmp/statuses.raw" "$tmp/san/"*
	(
		cd "$work" || exit 1
		env -i PATH="$tmp/bin:/usr/bin:/bin" HOME="$tmp" LC_ALL=C \
			TZ=UTC TOP="$top" XDG_CACHE_HOME="$tmp/cache" \
			DMPROF_POLICY_PATH="$top/policies" \
			ASAN_OPTIONS="$san" UBSAN_OPTIONS="$san" \
			TSAN_OPTIONS="$san" \
			LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}$san" \
			GOLDEN_RAW="$tmp/statuses.raw" bash "$tmp/cmd" \
			>"$tmp/out" 2>"$tmp/err"
		echo $? >"$tmp/status"
	)
	# "STATUS COMMAND" for each dmprof command that did not exit 0.
	if [ -s "$tmp/statuses.raw" ]; then
		LC_ALL=C sort "$tmp/statuses.raw" >"$tmp/statuses"
	else
		: >"$tmp/statuses"
	fi
	want_status=0
	[ -f "$src/expected.status" ] && want_status=$(cat "$src/expected.status")
	got_status=$(cat "$tmp/status")
	ok=1
	for s in stdout stderr statuses; do
		case $s in stdout) f=out ;; stderr) f=err ;; *) f=statuses ;; esac
		if [ "${GOLDEN_UPDATE:-}" = 1 ]; then
			if [ -s "$tmp/$f" ]; then cp "$tmp/$f" "$src/expected.$s"
			else rm -f "$src/expected.$s"; fi
			continue
		fi
		if [ -f "$src/expected.$s" ]; then
			if ! diff -u "$src/expected.$s" "$tmp/$f" >"$tmp/diff"; then
				echo "FAIL $c: $s differs"; sed 's/^/    /' "$tmp/diff" | head -40; ok=0
			fi
		elif [ -s "$tmp/$f" ]; then
			case $s in
			statuses) echo "FAIL $c: commands that did not exit 0 (STATUS COMMAND):" ;;
			*) echo "FAIL $c: unexpected $s:" ;;
			esac
			sed 's/^/    /' "$tmp/$f" | head -20; ok=0
		fi
	done
	if ls "$tmp/san/"* >/dev/null 2>&1; then
		echo "FAIL $c: a sanitizer reported:"
		cat "$tmp/san/"* | sed 's/^/    /' | head -40
		ok=0
	elif grep -q "$sanitizer" "$tmp/err"; then
		echo "FAIL $c: a sanitizer's report in its standard error:"
		grep -A20 "$sanitizer" "$tmp/err" | sed 's/^/    /' | head -30
		ok=0
	fi
	if [ "${GOLDEN_UPDATE:-}" = 1 ]; then
		if [ "$got_status" != 0 ]; then echo "$got_status" >"$src/expected.status"
		else rm -f "$src/expected.status"; fi
	elif [ "$got_status" != "$want_status" ]; then
		echo "FAIL $c: exit status $got_status, expected $want_status"; ok=0
	fi
	if [ $ok = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
echo "golden: $pass passed, $fail failed"
[ $fail = 0 ]
