#!/usr/bin/env bash
# start-agent.sh NAME [ARGS...]: run a Data Workers MCP server (or one of its subcommands).
#
# Works from any directory. Rebuilds bin/NAME when any Go source, go.mod/go.sum or embedded config
# is newer than the binary (build output goes to stderr), then execs it. Prints nothing on stdout of
# its own: stdout belongs to the MCP JSON-RPC stream.
#
#   ./start-agent.sh dw-quality                       # serve MCP on stdio
#   ./start-agent.sh dw-quality tools                 # list tools as JSON
#   ./start-agent.sh dw-quality call check_connections
#   ./start-agent.sh demo                             # the afternoon, replayed (see README)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
agents=(dw-connectors dw-schema dw-context-catalog dw-quality dw-incidents)
commands=(demo)

usage() {
	echo "usage: $0 NAME [ARGS...]" >&2
	echo "  agents:   ${agents[*]}" >&2
	echo "  commands: ${commands[*]}" >&2
}

if [[ $# -lt 1 ]]; then
	usage
	exit 2
fi
name="$1"
shift

pkg=""
for a in "${agents[@]}"; do
	[[ "$a" == "$name" ]] && pkg="./agents/$name"
done
for c in "${commands[@]}"; do
	[[ "$c" == "$name" ]] && pkg="./agents/internal/cmd/$name"
done
if [[ -z "$pkg" ]]; then
	echo "$0: unknown name '$name'" >&2
	usage
	exit 2
fi

gobin="$(command -v go || true)"
[[ -z "$gobin" && -x /usr/local/go/bin/go ]] && gobin=/usr/local/go/bin/go

bin="$root/bin/$name"
stale() {
	[[ ! -x "$bin" ]] && return 0
	[[ -n "$(find "$root/agents" "$root/pkg" "$root/configs" "$root/go.mod" "$root/go.sum" \
		\( -name '*.go' -o -name '*.yaml' -o -name '*.sql' -o -name 'go.mod' -o -name 'go.sum' -o -name '*.html' \) \
		-newer "$bin" -print -quit 2>/dev/null)" ]]
}

if stale; then
	if [[ -z "$gobin" ]]; then
		echo "$0: bin/$name is missing or stale and no Go toolchain was found on PATH" >&2
		exit 2
	fi
	mkdir -p "$root/bin"
	build() {
		# Re-check under the lock: another start may have just built it.
		if stale; then
			echo "start-agent: building bin/$name" >&2
			tmp="$(mktemp "$root/bin/.$name.XXXXXX")"
			# An interrupted build (Ctrl-C, a killed parent) leaves no half-written file behind.
			trap 'rm -f "$tmp"' EXIT
			trap 'exit 130' INT TERM
			if ! (cd "$root" && "$gobin" build -o "$tmp" "$pkg") 1>&2; then
				echo "$0: build of $name failed" >&2
				exit 2
			fi
			mv -f "$tmp" "$bin"
			trap - EXIT INT TERM
		fi
	}
	if command -v flock >/dev/null 2>&1; then
		exec 9>"$root/bin/.$name.lock"
		flock 9
		build
		exec 9>&-
	else
		build
	fi
fi

exec "$bin" "$@"
