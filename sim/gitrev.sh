#!/bin/sh
# Prints the revision a build records (KVSIM_GITREV, see sim/out/out_hdf5.h):
# the commit's 12-hex abbreviation, plus "-dirty.<8 hex>" when the paths
# given (the folders the build compiles, the Makefile) differ from that
# commit: tracked changes, staged or not, and untracked files git does not
# ignore. The hex is a digest of those changes, so two different uncommitted
# trees never pass for the same build (a sweep re-runs points made by another
# revision). Prints "unknown" outside a git checkout.
rev=$(git rev-parse --short=12 HEAD 2>/dev/null) || { echo unknown; exit 0; }
untracked=$(git ls-files --others --exclude-standard -- "$@" 2>/dev/null)
if git diff --quiet HEAD -- "$@" 2>/dev/null && [ -z "$untracked" ]; then
	echo "$rev"
	exit 0
fi
# Names and contents of untracked files count as well as the tracked diff.
d=$({ git diff --binary HEAD -- "$@"
      printf '%s\n' "$untracked"
      [ -z "$untracked" ] || printf '%s\n' "$untracked" | git hash-object --stdin-paths
    } 2>/dev/null | git hash-object --stdin | cut -c1-8)
echo "$rev-dirty.$d"
