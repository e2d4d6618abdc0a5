#!/bin/sh
# gridgpu gpus against fake NVML libraries (tests/fakegpu/, built by make into
# BUILD/tests/fakegpu): gridgpu loads them by name through LD_LIBRARY_PATH, the
# same dlopen("libnvidia-ml.so.1") as on a real GPU node. Every output form,
# MIG, CUDA_VISIBLE_DEVICES, a consumer card, an NVML that fails, and the
# clean answers for a missing library or function.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
FAKE=${GG_FAKEGPU_DIR:-$(cd "$(dirname "$GRIDGPU")/.." && pwd)/tests/fakegpu}
SPECS=$top/tests/fakegpu
[ -f "$FAKE/libnvidia-ml.so.1" ] || { not_ok "fake NVML built in $FAKE (make e2e builds it)"; done_testing; exit 1; }
unset CUDA_VISIBLE_DEVICES CUDA_VERSION CUDA_HOME GG_FAKE_NVML GG_FAKE_CUDA
# gg SPEC [VAR=VALUE...] -- ARGS: gridgpu with the fake NVML describing SPEC
gg() {
	spec=$1; shift
	case $spec in *.conf) spec=$SPECS/$spec ;; esac
	envs=""
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs="$envs $1"; shift; done
	shift
	# shellcheck disable=SC2086
	env GG_FAKE_NVML="$spec" LD_LIBRARY_PATH="$FAKE" $envs "$GRIDGPU" "$@" \
		>"$T_TMP/.stdout" 2>"$T_TMP/.stderr"
	RC=$?; OUT=$(cat "$T_TMP/.stdout"); ERR=$(cat "$T_TMP/.stderr")
}
py() { printf '%s' "$OUT" | python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# --- no NVIDIA driver: a normal answer -----------------------------------------
run_gg gpus
expect_eq "no NVML: exit 0" "$RC" 0
expect_eq "no NVML: says so" "$OUT" "no NVIDIA GPU visible: NVML (libnvidia-ml.so.1) not found: no NVIDIA driver on this machine"
run_gg --json gpus
json_valid gpus
expect_eq "no NVML: --json" "$(py 'd["gpus"], d["visible"], d["nvml"], "not found" in d["reason"]')" "[] 0 None True"
run_gg gpus --classad
expect_eq "no NVML: --classad" "$OUT" "DetectedGPUs=0"
gg "gpu;fail nvmlInit_v2 9" -- gpus
expect_eq "driver not loaded: a normal answer too" "$RC:$OUT" "0:no NVIDIA GPU visible: nvmlInit_v2: Driver Not Loaded (the NVIDIA kernel driver is not loaded)"
gg "" -- gpus
expect_eq "NVML without devices" "$RC:$OUT" "0:no NVIDIA GPU visible: NVML ($FAKE/libnvidia-ml.so.1, driver 550.54.15) reports no device"
gg "" -- gpus --classad
expect_eq "NVML without devices: --classad" "$OUT" "DetectedGPUs=0"

# --- one A100 in MIG mode with three MIG devices ----------------------------------
gg a100-mig.conf -- gpus
expect_eq "a100: exit 0" "$RC" 0
printf '%s\n' "$OUT" | grep -q "^NVIDIA driver 550.54.15, CUDA 12.4 ($FAKE/libnvidia-ml.so.1)$" &&
	ok "a100: header names driver, CUDA and the library loaded" || not_ok "a100: header ($OUT)"
printf '%s\n' "$OUT" | grep -Eq '^0 +NVIDIA A100-SXM4-40GB +8\.0 +40960 MiB +40337 MiB +on +on +- +GPU-5368a050-ed79-fab9-5cba-0d37c5f12c81$' &&
	ok "a100: the GPU row" || not_ok "a100: the GPU row ($OUT)"
printf '%s\n' "$OUT" | grep -Eq '^0/1 +MIG 2g\.10gb \(gi 5, ci 0\) +8\.0 +9856 MiB +9800 MiB +on +- +yes +MIG-207f657b-6f50-5c1a-94f0-01d07ff4cdb0$' &&
	ok "a100: a MIG row" || not_ok "a100: a MIG row ($OUT)"
expect_eq "a100: usable count" "$(printf '%s\n' "$OUT" | tail -1)" "3 devices usable by this process"
gg a100-mig.conf -- --json gpus
json_valid gpus
expect_eq "a100 --json: device" "$(py 'd["gpus"][0]["name"], d["gpus"][0]["mig_mode"], d["gpus"][0]["visible"], d["gpus"][0]["memory_total_mb"], d["gpus"][0]["compute_capability"]')" "NVIDIA A100-SXM4-40GB enabled False 40960 8.0"
expect_eq "a100 --json: MIG devices" "$(py '[(m["profile"], m["gpu_instance"], m["memory_total_mb"], m["visible"]) for m in d["gpus"][0]["mig"]]')" "[('3g.20gb', 1, 19968, True), ('2g.10gb', 5, 9856, True), ('1g.5gb', 13, 4864, True)]"
expect_eq "a100 --json: versions and library" "$(py 'd["driver_version"], d["cuda_driver_version"], d["cuda_driver_version_int"], d["visible"], d["nvml"]')" "550.54.15 12.4 12040 3 $FAKE/libnvidia-ml.so.1"
gg a100-mig.conf -- gpus --classad
cat >"$T_TMP/want" <<'EOF'
DetectedGPUs="MIG-0caf1ce3-fcd4-59da-8564-764000e3ace9, MIG-207f657b-6f50-5c1a-94f0-01d07ff4cdb0, MIG-987e0eb2-08b2-55ca-9663-89eaaf68156a"
Common=[ Capability=8.0; DriverVersion=12.40; ECCEnabled=true; MaxSupportedVersion=12040; ]
MIG_0caf1ce3_fcd4_59da_8564_764000e3ace9=[ id="MIG-0caf1ce3-fcd4-59da-8564-764000e3ace9"; DeviceName="NVIDIA A100-SXM4-40GB MIG 3g.20gb"; DeviceUuid="MIG-0caf1ce3-fcd4-59da-8564-764000e3ace9"; GlobalMemoryMb=19968; ]
MIG_207f657b_6f50_5c1a_94f0_01d07ff4cdb0=[ id="MIG-207f657b-6f50-5c1a-94f0-01d07ff4cdb0"; DeviceName="NVIDIA A100-SXM4-40GB MIG 2g.10gb"; DeviceUuid="MIG-207f657b-6f50-5c1a-94f0-01d07ff4cdb0"; GlobalMemoryMb=9856; ]
MIG_987e0eb2_08b2_55ca_9663_89eaaf68156a=[ id="MIG-987e0eb2-08b2-55ca-9663-89eaaf68156a"; DeviceName="NVIDIA A100-SXM4-40GB MIG 1g.5gb"; DeviceUuid="MIG-987e0eb2-08b2-55ca-9663-89eaaf68156a"; GlobalMemoryMb=4864; ]
EOF
expect_eq "a100 --classad: MIG devices by full UUID, nested" "$OUT" "$(cat "$T_TMP/want")"
gg a100-mig.conf CUDA_VISIBLE_DEVICES=MIG-987e0eb2 -- gpus --classad --not-nested
cat >"$T_TMP/want" <<'EOF'
DetectedGPUs="MIG-987e0eb2-08b2-55ca-9663-89eaaf68156a"
CUDACapability=8.0
CUDADeviceName="NVIDIA A100-SXM4-40GB MIG 1g.5gb"
CUDADeviceUuid="MIG-987e0eb2-08b2-55ca-9663-89eaaf68156a"
CUDADriverVersion=12.40
CUDAECCEnabled=true
CUDAGlobalMemoryMb=4864
CUDAMaxSupportedVersion=12040
EOF
expect_eq "a100: one MIG device given by CUDA_VISIBLE_DEVICES, not nested" "$OUT" "$(cat "$T_TMP/want")"
gg a100-mig.conf CUDA_VISIBLE_DEVICES=MIG-987e0eb2 -- gpus
printf '%s\n' "$OUT" | grep -Eq '^0/0 .* no +MIG-0caf' && printf '%s\n' "$OUT" | grep -Eq '^0/2 .* yes +MIG-987e' &&
	ok "a100: the table marks what may be used" || not_ok "a100: the table marks what may be used ($OUT)"

# --- two H100s --------------------------------------------------------------------
gg h100x2.conf CUDA_VERSION=12.2.1 -- gpus --classad
cat >"$T_TMP/want" <<'EOF'
DetectedGPUs="GPU-ddc1c098, GPU-9dc7c6d6"
Common=[ Capability=9.0; DeviceName="NVIDIA H100 80GB HBM3"; DriverVersion=12.40; ECCEnabled=true; GlobalMemoryMb=81559; MaxSupportedVersion=12040; RuntimeVersion=12.20; ]
GPU_ddc1c098=[ id="GPU-ddc1c098"; DeviceUuid="GPU-ddc1c098-3d53-91c4-a34b-4ab0a2c8e1b7"; ]
GPU_9dc7c6d6=[ id="GPU-9dc7c6d6"; DeviceUuid="GPU-9dc7c6d6-1f0e-4c7e-8a45-0e0c3d2b9a11"; ]
EOF
expect_eq "h100x2 --classad: short ids, Common, RuntimeVersion from CUDA_VERSION" "$OUT" "$(cat "$T_TMP/want")"
gg h100x2.conf -- gpus --classad --not-nested
cat >"$T_TMP/want" <<'EOF'
DetectedGPUs="GPU-ddc1c098, GPU-9dc7c6d6"
CUDACapability=9.0
CUDADeviceName="NVIDIA H100 80GB HBM3"
CUDADriverVersion=12.40
CUDAECCEnabled=true
CUDAGlobalMemoryMb=81559
CUDAMaxSupportedVersion=12040
GPU_ddc1c098DeviceUuid="GPU-ddc1c098-3d53-91c4-a34b-4ab0a2c8e1b7"
GPU_9dc7c6d6DeviceUuid="GPU-9dc7c6d6-1f0e-4c7e-8a45-0e0c3d2b9a11"
EOF
expect_eq "h100x2 --classad --not-nested: the attributes CMS matches on" "$OUT" "$(cat "$T_TMP/want")"
gg h100x2.conf CUDA_VISIBLE_DEVICES=1 -- gpus --classad
expect_eq "CUDA_VISIBLE_DEVICES=1" "$(printf '%s\n' "$OUT" | head -1)" 'DetectedGPUs="GPU-9dc7c6d6"'
gg h100x2.conf CUDA_VISIBLE_DEVICES=GPU-9dc7c6d6,GPU-ddc1 -- --json gpus
expect_eq "CUDA_VISIBLE_DEVICES by UUID prefixes" "$(py 'd["visible"], d["cuda_visible_devices"], [g["visible"] for g in d["gpus"]]')" "2 GPU-9dc7c6d6,GPU-ddc1 [True, True]"
gg h100x2.conf CUDA_VISIBLE_DEVICES=0,4,1 -- gpus
expect_eq "an invalid entry ends the list, as CUDA does" "$(printf '%s\n' "$OUT" | tail -1)" "1 device usable by this process (CUDA_VISIBLE_DEVICES=0,4,1)"
printf '%s' "$ERR" | grep -q "entry '4' names no device: it and the entries after it are ignored" &&
	ok "... and says so" || not_ok "... and says so ($ERR)"
for v in NoDevFiles -1 ""; do
	gg h100x2.conf "CUDA_VISIBLE_DEVICES=$v" -- gpus --classad
	expect_eq "CUDA_VISIBLE_DEVICES='$v': nothing usable" "$RC:$OUT" "0:DetectedGPUs=0"
done

# --- a consumer card ----------------------------------------------------------------
gg consumer.conf -- gpus
printf '%s\n' "$OUT" | grep -Eq '^0 +NVIDIA GeForce RTX 4090 +8\.9 +24564 MiB +23000 MiB +- +- +yes ' &&
	ok "consumer card: no ECC, no MIG, shown as '-'" || not_ok "consumer card ($OUT)"
expect_eq "consumer card: nothing on stderr" "$ERR" ""
gg consumer.conf -- gpus --classad --not-nested
printf '%s\n' "$OUT" | grep -q ECCEnabled && not_ok "consumer card: no ECCEnabled" || ok "consumer card: no ECCEnabled"
printf '%s\n' "$OUT" | grep -qx 'CUDADriverVersion=12.20' && ok "consumer card: driver for CUDA 12.2" || not_ok "consumer card: CUDADriverVersion ($OUT)"

# --- an NVML that fails --------------------------------------------------------------
gg errors.conf -- gpus
expect_eq "device errors: still a table, exit 0" "$RC" 0
printf '%s' "$ERR" | grep -q "^gridgpu: warning: GPU 1: nvmlDeviceGetMemoryInfo: GPU is lost$" &&
	ok "device errors: named on stderr" || not_ok "device errors: named on stderr ($ERR)"
printf '%s\n' "$OUT" | grep -Eq '^1 +NVIDIA H100 80GB HBM3 +\? +\? +\? ' && ok "device errors: unknown values as '?'" || not_ok "device errors: unknown values ($OUT)"
gg errors.conf -- --json gpus
expect_eq "device errors: --json carries them" "$(py 'd["gpus"][0]["error"], d["gpus"][1]["error"], d["gpus"][1]["memory_total"]')" "nvmlDeviceGetEccMode: Insufficient Permissions nvmlDeviceGetMemoryInfo: GPU is lost None"
gg "gpu;fail nvmlInit_v2 4" -- gpus
expect_eq "nvmlInit fails: exit 1" "$RC" 1
expect_eq "nvmlInit fails: the message" "$ERR" "gridgpu: reading the GPUs: nvmlInit_v2: Insufficient Permissions"
gg "gpu;fail nvmlDeviceGetCount_v2 999" -- --json gpus
expect_eq "counting fails: --json error" "$RC:$(py 'd["error"]["message"]')" "1:nvmlDeviceGetCount_v2: Unknown Error"

# --- a library that is not the NVML gridgpu needs ----------------------------------------
env GG_FAKE_NVML="$SPECS/h100x2.conf" LD_LIBRARY_PATH="$FAKE/broken" "$GRIDGPU" gpus >"$T_TMP/o" 2>"$T_TMP/e"
expect_eq "a missing function: exit 1" "$?" 1
expect_eq "a missing function: named" "$(cat "$T_TMP/e")" "gridgpu: reading the GPUs: libnvidia-ml.so.1 has no function nvmlDeviceGetUUID: not NVML, or an NVIDIA driver too old for gridgpu"
env GG_FAKE_NVML="$SPECS/a100-mig.conf" LD_LIBRARY_PATH="$FAKE/old" "$GRIDGPU" -v gpus >"$T_TMP/o" 2>"$T_TMP/e"
expect_eq "an old driver without MIG functions: exit 0" "$?" 0
grep -Eq '^0 +NVIDIA A100-SXM4-40GB .* on +- +yes ' "$T_TMP/o" && ok "an old driver: the GPU whole, MIG unknown" || not_ok "an old driver ($(cat "$T_TMP/o"))"
grep -q "NVML lacks: nvmlDeviceGetMigMode" "$T_TMP/e" && ok "an old driver: -v says what NVML lacks" || not_ok "an old driver: -v ($(cat "$T_TMP/e"))"
mkdir -p "$T_TMP/notnvml" && cp "$FAKE/libcuda.so.1" "$T_TMP/notnvml/libnvidia-ml.so.1"
env LD_LIBRARY_PATH="$T_TMP/notnvml" "$GRIDGPU" gpus >"$T_TMP/o" 2>"$T_TMP/e"
expect_eq "another library under NVML's name" "$?:$(cat "$T_TMP/e")" "1:gridgpu: reading the GPUs: libnvidia-ml.so.1 has no function nvmlInit_v2: not NVML, or an NVIDIA driver too old for gridgpu"

# --- usage -----------------------------------------------------------------------------
expect_fail "--not-nested needs --classad" 2 "--not-nested goes with --classad" gpus --not-nested
expect_fail "--classad and --json" 2 "choose one" --json gpus --classad
expect_fail "no operands" 2 "gpus takes no arguments" gpus extra
run_gg help gpus
printf '%s' "$OUT" | grep -q -- "--classad" && ok "help gpus lists --classad" || not_ok "help gpus"
expect_eq "completion knows the options" "$("$GRIDGPU" __complete options gpus | grep -c -- '--classad\|--not-nested')" 2
done_testing
