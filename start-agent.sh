#!/usr/bin/env bash
# start-agent.sh NAME [ARGS...]: run a Data Workers MCP server (or one of its subcommands).
# start-agent.sh build: build all five servers into bin/ now, before a client connects.
#
# Works from any directory. Rebuilds bin/NAME when any Go source, go.mod/go.sum or embedded config
# is newer than the binary (build output and a note that the first start is slow go to stderr), then
# execs it. Prints nothing on stdout of its own: stdout belongs to the MCP JSON-RPC stream.
#
#   ./start-agent.sh build                            # once after clone or pull: clients time out on a cold build
#   ./start-agent.sh dw-quality                       # serve MCP on stdio
#   ./start-agent.sh dw-quality tools                 # list tools as JSON
#   ./start-agent.sh dw-quality call check_connections
#   ./start-agent.sh demo                             # the afternoon, replayed (see README)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
agents=(dw-connectors dw-schema dw-context-catalog dw-quality dw-incidents)
commands=(demo)

usage() {
	echo "usage: $0 NAME [ARGS...]   or   $0 build" >&2
	echo "  agents:   ${agents[*]}" >&2
	echo "  commands: ${commands[*]}" >&2
	echo "  build:    build the five agents into bin/ now (do it before adding the servers to a client)" >&2
}

if [[ $# -lt 1 ]]; then
	usage
	exit 2
fi

gobin="$(command -v go || true)"
[[ -z "$gobin" && -x /usr/local/go/bin/go ]] && gobin=/usr/local/go/bin/go

# package_of NAME: the Go package that builds bin/NAME, or "" for an unknown name.
package_of() {
	local a
	for a in "${agents[@]}"; do
		[[ "$a" == "$1" ]] && echo "./agents/$1" && return
	done
	for a in "${commands[@]}"; do
		[[ "$a" == "$1" ]] && echo "./agents/internal/cmd/$1" && return
	done
}

# stale NAME: bin/NAME is missing, or older than a source, go.mod/go.sum or an embedded file (tests
# are not part of the binary: editing one does not make the next client start wait for a build).
stale() {
	local bin="$root/bin/$1"
	[[ ! -x "$bin" ]] && return 0
	[[ -n "$(find "$root/agents" "$root/pkg" "$root/configs" "$root/go.mod" "$root/go.sum" \
		\( \( -name '*.go' ! -name '*_test.go' \) -o -name '*.yaml' -o -name '*.sql' -o -name 'go.mod' -o -name 'go.sum' -o -name '*.html' \) \
		-newer "$bin" -print -quit 2>/dev/null)" ]]
}

# commit: the checkout's commit for `version`, "+dirty" when it has uncommitted changes.
commit() {
	local c
	c="$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null)" || return 0
	[[ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]] && c="$c+dirty"
	echo "$c"
}

# ensure_built NAME: rebuild bin/NAME when stale, under a lock so concurrent starts build once.
ensure_built() {
	local name="$1" pkg
	pkg="$(package_of "$name")"
	stale "$name" || return 0
	if [[ -z "$gobin" ]]; then
		echo "$0: bin/$name is missing or stale and no Go toolchain was found on PATH" >&2
		exit 2
	fi
	mkdir -p "$root/bin"
	(
		if command -v flock >/dev/null 2>&1; then
			exec 9>"$root/bin/.$name.lock"
			flock 9
		fi
		# Re-check under the lock: another start may have just built it.
		stale "$name" || exit 0
		if [[ -n "$building_all" ]]; then
			echo "start-agent: building bin/$name" >&2
		else
			echo "start-agent: building bin/$name; the first start after a clone or pull is slow (a cold build takes minutes)." >&2
			echo "start-agent: run '$root/start-agent.sh build' beforehand so an MCP client does not time out." >&2
		fi
		tmp="$(mktemp "$root/bin/.$name.XXXXXX")"
		# An interrupted build (Ctrl-C, a killed parent) leaves no half-written file behind.
		trap 'rm -f "$tmp"' EXIT
		trap 'exit 130' INT TERM
		# minicore_disabled: gosnowflake's documented tag that leaves its native "minicore" out of the
		# binary. We never load it (SF_DISABLE_MINICORE=true), yet without the tag its initialiser
		# still detected the libc at every start of the four agents that link the driver.
		if ! (cd "$root" && "$gobin" build -tags minicore_disabled -ldflags "-X github.com/dataworkers/dw/pkg/version.Commit=$(commit)" -o "$tmp" "$pkg") 1>&2; then
			echo "$0: build of $name failed" >&2
			exit 2
		fi
		mv -f "$tmp" "$root/bin/$name"
	) || exit $?
}

name="$1"
shift
building_all=""
if [[ "$name" == "build" ]]; then
	building_all=1
	if [[ $# -gt 0 ]]; then
		usage
		exit 2
	fi
	for n in "${agents[@]}"; do
		ensure_built "$n"
	done
	echo "start-agent: bin/ is up to date: ${agents[*]} (the demo builds when you first run it)" >&2
	exit 0
fi
if [[ -z "$(package_of "$name")" ]]; then
	echo "$0: unknown name '$name'" >&2
	usage
	exit 2
fi
ensure_built "$name"
exec "$root/bin/$name" "$@"
