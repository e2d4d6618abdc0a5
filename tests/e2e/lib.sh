# Shared helpers for the end-to-end tests (sourced). TAP-style output:
#   ok N - what      /  not ok N - what
# Each test file runs in its own throwaway directory with its own HOME.
set -u
: "${GRIDGPU:?GRIDGPU must point at the gridgpu binary}"
: "${GG_TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
T_N=0
T_FAIL=0
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/gg-e2e.XXXXXX")
export HOME="$T_TMP/home" XDG_CONFIG_HOME="$T_TMP/home/.config" \
	XDG_STATE_HOME="$T_TMP/home/.local/state" XDG_CACHE_HOME="$T_TMP/home/.cache"
mkdir -p "$HOME"
unset XDG_RUNTIME_DIR BEARER_TOKEN BEARER_TOKEN_FILE X509_USER_PROXY X509_USER_CERT X509_USER_KEY
t_cleanup() { [ -n "${T_KEEP:-}" ] || rm -rf "$T_TMP"; }
trap t_cleanup EXIT

ok() { T_N=$((T_N + 1)); echo "ok $T_N - $*"; }
not_ok() { T_N=$((T_N + 1)); T_FAIL=$((T_FAIL + 1)); echo "not ok $T_N - $*"; }
# check "description" command...   (passes when the command succeeds)
check() { d=$1; shift; if "$@" >"$T_TMP/.out" 2>&1; then ok "$d"; else not_ok "$d"; sed 's/^/#   /' "$T_TMP/.out" | tail -15; fi; }
# run_gg: run gridgpu, capture stdout/stderr/exit code in $OUT, $ERR, $RC
run_gg() { "$GRIDGPU" "$@" >"$T_TMP/.stdout" 2>"$T_TMP/.stderr"; RC=$?; OUT=$(cat "$T_TMP/.stdout"); ERR=$(cat "$T_TMP/.stderr"); }
# expect_fail "description" EXITCODE "stderr substring" gridgpu-args...
expect_fail() {
	d=$1 code=$2 msg=$3; shift 3
	run_gg "$@"
	if [ "$RC" -eq "$code" ] && printf '%s' "$ERR" | grep -qF -- "$msg"; then
		if [ "$(printf '%s\n' "$ERR" | grep -c '^gridgpu: ')" -ge 1 ]; then ok "$d"; return; fi
	fi
	not_ok "$d (exit $RC, want $code; stderr: $(printf '%s' "$ERR" | head -3))"
}
# expect_eq "description" actual expected
expect_eq() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1 (got '$2', want '$3')"; fi; }
done_testing() { echo "1..$T_N"; [ "$T_FAIL" -eq 0 ]; }
# Source the test site's variables when a site is up.
if [ -n "${GG_TB_DIR:-}" ] && [ -f "$GG_TB_DIR/env.sh" ]; then . "$GG_TB_DIR/env.sh"; fi
