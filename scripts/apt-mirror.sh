#!/bin/sh
# apt-mirror.sh - prints the address of the Debian archive that this
# machine's own apt sources use (the one that serves SUITE, bookworm by
# default, with component main), so that a step needing another suite or a
# deb-src line reuses the machine's mirror instead of naming one.
#
#   scripts/apt-mirror.sh [SUITE]
#
# Reads /etc/apt/sources.list and /etc/apt/sources.list.d/ in both formats
# (one-line "deb URI SUITE COMPONENTS" and deb822 .sources stanzas).  Exits
# 1, with a message on stderr, when no enabled `deb` source serves SUITE.
set -eu

suite=${1:-bookworm}
dir=${APT_SOURCES_DIR:-/etc/apt}

{
	# One-line format: deb [options] URI SUITE COMPONENT...
	for f in "$dir/sources.list" "$dir"/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" |
			awk -v s="$suite" '$1 == "deb" && $3 == s {
				for (i = 4; i <= NF; i++) if ($i == "main") { print $2; next }
			}'
	done
	# deb822 format: stanzas separated by blank lines.
	for f in "$dir"/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		# A comment line is dropped whole: it does not end a stanza.
		sed -e '/^[ \t]*#/d' -e 's/#.*//' "$f" | awk -v s="$suite" '
			function flush() {
				if (types ~ /(^| )deb( |$)/ && enabled != "no" &&
				    (" " suites " ") ~ (" " s " ") &&
				    (" " comps " ") ~ / main /) {
					n = split(uris, u, " ")
					if (n) print u[1]
				}
				types = uris = suites = comps = ""; enabled = "yes"
			}
			BEGIN { enabled = "yes" }
			/^[ \t]*$/ { flush(); next }
			{
				key = tolower($1); sub(/:$/, "", key)
				val = $0; sub(/^[^:]*:[ \t]*/, "", val)
				if (key == "types") types = val
				else if (key == "uris") uris = val
				else if (key == "suites") suites = val
				else if (key == "components") comps = val
				else if (key == "enabled") enabled = tolower(val)
			}
			END { flush() }'
	done
} | sed -n '1{s:/*$::;p;q}' | grep . || {
	echo "apt-mirror: no enabled deb source serves \"$suite\" main in $dir" >&2
	exit 1
}
