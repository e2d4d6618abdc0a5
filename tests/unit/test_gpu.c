/* Unit tests of lib/gpu against the fake NVML and CUDA driver libraries of
 * tests/fakegpu/ (built by make into $(B)/tests/fakegpu, found through the
 * compiled-in GG_FAKEGPU_DIR or $GG_FAKEGPU_DIR): devices, MIG, errors, missing
 * libraries and functions, CUDA_VISIBLE_DEVICES, JSON, ClassAds, the
 * allocation probe and the runtime version. */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu.h"

#ifndef GG_FAKEGPU_DIR
#define GG_FAKEGPU_DIR "build/tests/fakegpu"
#endif
#ifndef GG_FAKEGPU_SPECS
#define GG_FAKEGPU_SPECS "tests/fakegpu"
#endif

static char libdir[512], specs[512], tmp[64];

static void lib(char *buf, size_t len, const char *variant, const char *name)
{
	snprintf(buf, len, "%s/%s%s%s", libdir, variant ? variant : "", variant ? "/" : "", name);
}

static int setup(void **state)
{
	(void)state;
	const char *d = getenv("GG_FAKEGPU_DIR");
	snprintf(libdir, sizeof libdir, "%s", d && *d ? d : GG_FAKEGPU_DIR);
	snprintf(specs, sizeof specs, "%s", GG_FAKEGPU_SPECS);
	unsetenv("CUDA_VISIBLE_DEVICES");
	unsetenv("CUDA_VERSION");
	unsetenv("CUDA_HOME");
	unsetenv("GG_FAKE_CUDA");
	strcpy(tmp, "/tmp/gg-unit-gpu.XXXXXX");
	return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return unit_rmtree(tmp);
}

/* Open the fake NVML (variant NULL, "old" or "broken") with a description:
 * a file of tests/fakegpu when it ends in .conf, else inline text. */
static int open_fake(const char *variant, const char *spec, struct gg_gpu **g, struct gg_err *err)
{
	char path[600], sp[600];
	lib(path, sizeof path, variant, "libnvidia-ml.so.1");
	if (spec && strstr(spec, ".conf")) {
		snprintf(sp, sizeof sp, "%s/%s", specs, spec);
		setenv("GG_FAKE_NVML", sp, 1);
	} else if (spec) {
		setenv("GG_FAKE_NVML", spec, 1);
	} else {
		unsetenv("GG_FAKE_NVML");
	}
	return gg_gpu_open(path, g, err);
}

static void query(const char *variant, const char *spec, struct gg_gpu_info *info)
{
	struct gg_gpu *g = NULL;
	struct gg_err err = {0};
	int rc = open_fake(variant, spec, &g, &err);
	if (rc)
		fprintf(stderr, "open: %s\n", err.msg);
	assert_int_equal(rc, 0);
	rc = gg_gpu_query(g, info, &err);
	if (rc)
		fprintf(stderr, "query: %s\n", err.msg);
	assert_int_equal(rc, 0);
	gg_gpu_close(g);
}

static void test_missing_library(void **state)
{
	(void)state;
	struct gg_gpu *g = (struct gg_gpu *)1;
	struct gg_err err = {0};
	char path[600];
	lib(path, sizeof path, "nosuch", "libnvidia-ml.so.1");
	assert_int_equal(gg_gpu_open(path, &g, &err), GG_ENOTFOUND);
	assert_null(g);
	assert_non_null(strstr(err.msg, "not found: no NVIDIA driver"));
	/* By name, through the dynamic linker's search: not on this machine. */
	if (gg_gpu_open(NULL, &g, &err) == 0) {
		gg_gpu_close(g); /* a real GPU machine: nothing to check */
	} else {
		assert_int_equal(err.code, GG_ENOTFOUND);
		assert_non_null(strstr(err.msg, "libnvidia-ml.so.1"));
		char *json = (char *)"x";
		assert_int_equal(gg_gpu_provenance(&json, &err), 0);
		assert_null(json);
	}
	/* A file that is not a library at all: an error, not "no GPU". */
	char bad[128];
	snprintf(bad, sizeof bad, "%s/libnvidia-ml.so.1", tmp);
	FILE *f = fopen(bad, "w");
	fputs("not an ELF file\n", f);
	fclose(f);
	assert_int_equal(gg_gpu_open(bad, &g, &err), GG_EFAIL);
	assert_non_null(strstr(err.msg, "loading NVML"));
	gg_gpu_close(NULL);
}

static void test_missing_symbol(void **state)
{
	(void)state;
	struct gg_gpu *g = NULL;
	struct gg_err err = {0};
	assert_int_equal(open_fake("broken", "h100x2.conf", &g, &err), GG_EFAIL);
	assert_null(g);
	assert_non_null(strstr(err.msg, "has no function nvmlDeviceGetUUID"));
	/* The CUDA driver library is not NVML. */
	char path[600];
	lib(path, sizeof path, NULL, "libcuda.so.1");
	assert_int_equal(gg_gpu_open(path, &g, &err), GG_EFAIL);
	assert_non_null(strstr(err.msg, "has no function nvmlInit_v2"));
}

static void test_init_errors(void **state)
{
	(void)state;
	struct gg_gpu *g = NULL;
	struct gg_err err = {0};
	assert_int_equal(open_fake(NULL, "gpu;fail nvmlInit_v2 9", &g, &err), GG_ENOTFOUND);
	assert_non_null(strstr(err.msg, "nvmlInit_v2: Driver Not Loaded"));
	assert_int_equal(open_fake(NULL, "gpu;fail nvmlInit_v2 4", &g, &err), GG_EFAIL);
	assert_string_equal(err.msg, "nvmlInit_v2: Insufficient Permissions");
	assert_int_equal(open_fake(NULL, "gpu;fail nvmlDeviceGetCount_v2 18", &g, &err), 0);
	struct gg_gpu_info info;
	assert_int_equal(gg_gpu_query(g, &info, &err), GG_EFAIL);
	assert_non_null(strstr(err.msg, "nvmlDeviceGetCount_v2: RM has detected"));
	gg_gpu_close(g);
}

static void test_no_device(void **state)
{
	(void)state;
	struct gg_gpu_info info;
	query(NULL, NULL, &info);
	assert_int_equal(info.ndevs, 0);
	assert_int_equal(info.nvisible, 0);
	assert_string_equal(info.driver, "550.54.15");
	assert_int_equal(info.cuda_driver, 12040);
	assert_null(info.missing);
	char *ad = gg_gpu_classad(&info, GG_CLASSAD_NESTED, NULL);
	assert_string_equal(ad, "DetectedGPUs=0\n");
	free(ad);
	json_t *j = gg_gpu_info_json(&info);
	assert_int_equal(json_array_size(json_object_get(j, "gpus")), 0);
	assert_string_equal(json_string_value(json_object_get(j, "cuda_driver_version")), "12.4");
	assert_non_null(strstr(json_string_value(json_object_get(j, "nvml")), "libnvidia-ml.so.1"));
	json_decref(j);
	gg_gpu_info_clear(&info);
}

static void test_a100_mig(void **state)
{
	(void)state;
	struct gg_gpu_info info;
	query(NULL, "a100-mig.conf", &info);
	assert_int_equal(info.ndevs, 1);
	const struct gg_gpu_dev *d = &info.devs[0];
	assert_string_equal(d->name, "NVIDIA A100-SXM4-40GB");
	assert_string_equal(d->uuid, "GPU-5368a050-ed79-fab9-5cba-0d37c5f12c81");
	assert_int_equal(d->cc_major, 8);
	assert_int_equal(d->cc_minor, 0);
	assert_int_equal(d->mem_total, 40960ULL << 20);
	assert_int_equal(d->mem_free, 40337ULL << 20);
	assert_int_equal(d->ecc, GG_GPU_ON);
	assert_int_equal(d->mig, GG_GPU_ON);
	assert_null(d->error);
	assert_int_equal(d->nmigs, 3);
	assert_int_equal(d->visible, 0); /* in MIG mode: only its MIG devices are usable */
	assert_int_equal(info.nvisible, 3);
	const char *profiles[] = {"3g.20gb", "2g.10gb", "1g.5gb"};
	const int gis[] = {1, 5, 13};
	for (size_t k = 0; k < 3; k++) {
		assert_string_equal(d->migs[k].profile, profiles[k]);
		assert_int_equal(d->migs[k].gi_id, gis[k]);
		assert_int_equal(d->migs[k].ci_id, 0);
		assert_int_equal(d->migs[k].index, k);
		assert_true(d->migs[k].visible);
	}
	assert_string_equal(d->migs[0].name, "NVIDIA A100-SXM4-40GB MIG 3g.20gb");
	assert_int_equal(d->migs[2].mem_total, 4864ULL << 20);

	char *ad = gg_gpu_classad(&info, GG_CLASSAD_NESTED, NULL);
	assert_string_equal(
		ad,
		"DetectedGPUs=\"MIG-0caf1ce3-fcd4-59da-8564-764000e3ace9, "
		"MIG-207f657b-6f50-5c1a-94f0-01d07ff4cdb0, MIG-987e0eb2-08b2-55ca-9663-89eaaf68156a\"\n"
		"Common=[ Capability=8.0; DriverVersion=12.40; ECCEnabled=true; "
		"MaxSupportedVersion=12040; ]\n"
		"MIG_0caf1ce3_fcd4_59da_8564_764000e3ace9=[ id=\"MIG-0caf1ce3-fcd4-59da-8564-764000e3ace9\"; "
		"DeviceName=\"NVIDIA A100-SXM4-40GB MIG 3g.20gb\"; "
		"DeviceUuid=\"MIG-0caf1ce3-fcd4-59da-8564-764000e3ace9\"; GlobalMemoryMb=19968; ]\n"
		"MIG_207f657b_6f50_5c1a_94f0_01d07ff4cdb0=[ id=\"MIG-207f657b-6f50-5c1a-94f0-01d07ff4cdb0\"; "
		"DeviceName=\"NVIDIA A100-SXM4-40GB MIG 2g.10gb\"; "
		"DeviceUuid=\"MIG-207f657b-6f50-5c1a-94f0-01d07ff4cdb0\"; GlobalMemoryMb=9856; ]\n"
		"MIG_987e0eb2_08b2_55ca_9663_89eaaf68156a=[ id=\"MIG-987e0eb2-08b2-55ca-9663-89eaaf68156a\"; "
		"DeviceName=\"NVIDIA A100-SXM4-40GB MIG 1g.5gb\"; "
		"DeviceUuid=\"MIG-987e0eb2-08b2-55ca-9663-89eaaf68156a\"; GlobalMemoryMb=4864; ]\n");
	free(ad);

	json_t *j = gg_gpu_info_json(&info);
	json_t *g0 = json_array_get(json_object_get(j, "gpus"), 0);
	assert_string_equal(json_string_value(json_object_get(g0, "mig_mode")), "enabled");
	assert_false(json_boolean_value(json_object_get(g0, "visible")));
	json_t *m1 = json_array_get(json_object_get(g0, "mig"), 1);
	assert_string_equal(json_string_value(json_object_get(m1, "profile")), "2g.10gb");
	assert_int_equal(json_integer_value(json_object_get(m1, "gpu_instance")), 5);
	assert_int_equal(json_integer_value(json_object_get(m1, "memory_total_mb")), 9856);
	assert_int_equal(json_integer_value(json_object_get(j, "visible")), 3);
	assert_true(json_is_null(json_object_get(j, "cuda_visible_devices")));
	json_decref(j);

	/* One MIG device given to the job, as a batch system does. */
	assert_int_equal(
		gg_gpu_set_visible(&info, "MIG-207f657b-6f50-5c1a-94f0-01d07ff4cdb0", NULL), 0);
	assert_int_equal(info.nvisible, 1);
	ad = gg_gpu_classad(&info, GG_CLASSAD_NESTED, NULL);
	assert_string_equal(ad,
			    "DetectedGPUs=\"MIG-207f657b-6f50-5c1a-94f0-01d07ff4cdb0\"\n"
			    "Common=[ Capability=8.0; DeviceName=\"NVIDIA A100-SXM4-40GB MIG "
			    "2g.10gb\"; DeviceUuid=\"MIG-207f657b-6f50-5c1a-94f0-01d07ff4cdb0\"; "
			    "DriverVersion=12.40; ECCEnabled=true; GlobalMemoryMb=9856; "
			    "MaxSupportedVersion=12040; ]\n"
			    "MIG_207f657b_6f50_5c1a_94f0_01d07ff4cdb0=[ "
			    "id=\"MIG-207f657b-6f50-5c1a-94f0-01d07ff4cdb0\"; ]\n");
	free(ad);
	gg_gpu_info_clear(&info);
}

static void test_h100x2(void **state)
{
	(void)state;
	struct gg_gpu_info info;
	query(NULL, "h100x2.conf", &info);
	assert_int_equal(info.ndevs, 2);
	assert_int_equal(info.nvisible, 2);
	assert_int_equal(info.devs[1].mig, GG_GPU_OFF);
	assert_int_equal(info.devs[1].nmigs, 0);
	assert_true(info.devs[1].visible);
	char *ad = gg_gpu_classad(&info, GG_CLASSAD_NESTED, NULL);
	assert_string_equal(ad, "DetectedGPUs=\"GPU-ddc1c098, GPU-9dc7c6d6\"\n"
				"Common=[ Capability=9.0; DeviceName=\"NVIDIA H100 80GB HBM3\"; "
				"DriverVersion=12.40; ECCEnabled=true; GlobalMemoryMb=81559; "
				"MaxSupportedVersion=12040; ]\n"
				"GPU_ddc1c098=[ id=\"GPU-ddc1c098\"; "
				"DeviceUuid=\"GPU-ddc1c098-3d53-91c4-a34b-4ab0a2c8e1b7\"; ]\n"
				"GPU_9dc7c6d6=[ id=\"GPU-9dc7c6d6\"; "
				"DeviceUuid=\"GPU-9dc7c6d6-1f0e-4c7e-8a45-0e0c3d2b9a11\"; ]\n");
	free(ad);
	ad = gg_gpu_classad(&info, GG_CLASSAD_NOT_NESTED, "12.2.1");
	assert_string_equal(
		ad, "DetectedGPUs=\"GPU-ddc1c098, GPU-9dc7c6d6\"\n"
		    "CUDACapability=9.0\n"
		    "CUDADeviceName=\"NVIDIA H100 80GB HBM3\"\n"
		    "CUDADriverVersion=12.40\n"
		    "CUDAECCEnabled=true\n"
		    "CUDAGlobalMemoryMb=81559\n"
		    "CUDAMaxSupportedVersion=12040\n"
		    "CUDARuntimeVersion=12.20\n"
		    "GPU_ddc1c098DeviceUuid=\"GPU-ddc1c098-3d53-91c4-a34b-4ab0a2c8e1b7\"\n"
		    "GPU_9dc7c6d6DeviceUuid=\"GPU-9dc7c6d6-1f0e-4c7e-8a45-0e0c3d2b9a11\"\n");
	free(ad);
	gg_gpu_info_clear(&info);
}

static void test_consumer(void **state)
{
	(void)state;
	struct gg_gpu_info info;
	query(NULL, "consumer.conf", &info);
	const struct gg_gpu_dev *d = &info.devs[0];
	assert_int_equal(d->ecc, GG_GPU_UNKNOWN); /* "Not Supported" is an answer, not an error */
	assert_int_equal(d->mig, GG_GPU_UNKNOWN);
	assert_null(d->error);
	assert_int_equal(info.cuda_driver, 12020);
	char *ad = gg_gpu_classad(&info, GG_CLASSAD_NOT_NESTED, NULL);
	assert_string_equal(ad, "DetectedGPUs=\"GPU-c4a646d7\"\n"
				"CUDACapability=8.9\n"
				"CUDADeviceName=\"NVIDIA GeForce RTX 4090\"\n"
				"CUDADeviceUuid=\"GPU-c4a646d7-aa14-1dd1-f1b0-57288cda864d\"\n"
				"CUDADriverVersion=12.20\n"
				"CUDAGlobalMemoryMb=24564\n"
				"CUDAMaxSupportedVersion=12020\n");
	free(ad);
	json_t *j = gg_gpu_info_json(&info);
	json_t *g0 = json_array_get(json_object_get(j, "gpus"), 0);
	assert_true(json_is_null(json_object_get(g0, "ecc")));
	assert_true(json_is_null(json_object_get(g0, "mig_mode")));
	assert_string_equal(json_string_value(json_object_get(g0, "compute_capability")), "8.9");
	json_decref(j);
	gg_gpu_info_clear(&info);
}

static void test_errors(void **state)
{
	(void)state;
	struct gg_gpu_info info;
	query(NULL, "errors.conf", &info);
	assert_int_equal(info.ndevs, 2);
	assert_string_equal(info.devs[0].error, "nvmlDeviceGetEccMode: Insufficient Permissions");
	assert_int_equal(info.devs[0].ecc, GG_GPU_UNKNOWN);
	assert_true(info.devs[0].have_mem);
	assert_string_equal(info.devs[1].error, "nvmlDeviceGetMemoryInfo: GPU is lost");
	assert_false(info.devs[1].have_mem);
	assert_int_equal(info.devs[1].cc_major, -1);
	/* Both are still listed; properties that differ stay per device. */
	char *ad = gg_gpu_classad(&info, GG_CLASSAD_NESTED, NULL);
	assert_non_null(strstr(ad, "DetectedGPUs=\"GPU-6a96bd13, GPU-124d06a7\"\n"));
	assert_non_null(strstr(ad, "GPU_6a96bd13=[ id=\"GPU-6a96bd13\"; Capability=9.0; "));
	assert_null(strstr(ad, "GPU_124d06a7=[ id=\"GPU-124d06a7\"; Capability"));
	free(ad);
	gg_gpu_info_clear(&info);
	/* A handle that cannot be had: the device is listed with the error. */
	query(NULL, "gpu;gpu;fail nvmlDeviceGetHandleByIndex_v2 15 dev=0", &info);
	assert_string_equal(info.devs[0].error, "nvmlDeviceGetHandleByIndex_v2: GPU is lost");
	assert_false(info.devs[0].visible);
	assert_true(info.devs[1].visible);
	assert_int_equal(info.nvisible, 1);
	gg_gpu_info_clear(&info);
	/* A failing MIG slot is shown on its GPU; the other slots are read. */
	query(NULL, "gpu mig=on;mig;mig;fail nvmlDeviceGetMigDeviceHandleByIndex 4 dev=0/1", &info);
	assert_int_equal(info.devs[0].nmigs, 1);
	assert_string_equal(info.devs[0].error,
			    "nvmlDeviceGetMigDeviceHandleByIndex: Insufficient Permissions");
	gg_gpu_info_clear(&info);
}

static void test_old_driver(void **state)
{
	(void)state;
	struct gg_gpu_info info;
	query("old", "a100-mig.conf", &info);
	assert_non_null(info.missing);
	assert_non_null(strstr(info.missing, "nvmlDeviceGetMigMode"));
	assert_null(strstr(info.missing, "CudaDriverVersion")); /* the old call was there */
	assert_int_equal(info.cuda_driver, 12040);
	assert_int_equal(info.devs[0].mig, GG_GPU_UNKNOWN);
	assert_int_equal(info.devs[0].nmigs, 0);
	assert_true(info.devs[0].visible);
	json_t *j = gg_gpu_info_json(&info);
	json_t *m = json_object_get(j, "nvml_missing");
	assert_true(json_array_size(m) >= 3);
	assert_string_equal(json_string_value(json_array_get(m, 0)), "nvmlDeviceGetMigMode");
	json_decref(j);
	gg_gpu_info_clear(&info);
}

/* The Slurm test site's node (tests/testbed/site-up): 3 whole A100s and an
 * A100-80GB split into 7 MIG devices of one profile. A job Slurm gives one
 * of them sees exactly that one when CUDA_VISIBLE_DEVICES names its UUID;
 * Slurm's bare gres index of the first slice ("3", what Slurm says without
 * NVML) would be the fourth GPU, so all seven. */
static void test_slurm_node(void **state)
{
	(void)state;
	struct gg_gpu_info info;
	char spec[2048];
	int n = snprintf(spec, sizeof spec, "%s",
			 "gpu uuid=GPU-00000000-a100-4e0d-8c3b-5ee000000000 mem=40960;"
			 "gpu uuid=GPU-00000001-a100-4e0d-8c3b-5ee000000011 mem=40960;"
			 "gpu uuid=GPU-00000002-a100-4e0d-8c3b-5ee000000022 mem=40960;"
			 "gpu name=\"NVIDIA A100-SXM4-80GB\" "
			 "uuid=GPU-00000003-a100-4e0d-8c3b-5ee000000033 mem=81920 mig=on");
	for (int k = 0; k < 7; k++)
		n += snprintf(
			spec + n, sizeof spec - (size_t)n,
			";mig profile=1g.10gb uuid=MIG-0000003%d-a100-5ce0-8000-00000000001%d "
			"mem=9856 gi=%d ci=0 slot=%d",
			k, k, k + 7, k);
	query(NULL, spec, &info);
	assert_int_equal(info.ndevs, 4);
	assert_int_equal(info.devs[3].nmigs, 7);
	for (size_t k = 0; k < 7; k++) {
		assert_string_equal(info.devs[3].migs[k].profile, "1g.10gb");
		assert_string_equal(info.devs[3].migs[k].name, "NVIDIA A100-SXM4-80GB MIG 1g.10gb");
	}
	assert_int_equal(info.nvisible, 3 + 7);
	struct gg_err err = {0};
	assert_int_equal(
		gg_gpu_set_visible(&info, "MIG-00000034-a100-5ce0-8000-000000000014", &err), 0);
	assert_int_equal(info.nvisible, 1);
	assert_null(info.cvd_note);
	for (size_t k = 0; k < 7; k++)
		assert_int_equal(info.devs[3].migs[k].visible, k == 4);
	for (size_t i = 0; i < 4; i++)
		assert_false(info.devs[i].visible);
	assert_int_equal(gg_gpu_set_visible(&info, "3", &err), 0);
	assert_int_equal(info.nvisible, 7);
	assert_int_equal(gg_gpu_set_visible(&info, "0,1", &err), 0);
	assert_int_equal(info.nvisible, 2);
	assert_false(info.devs[3].migs[0].visible);
	gg_gpu_info_clear(&info);
}

/* CUDA_VISIBLE_DEVICES on a node with two whole GPUs and one in MIG mode. */
static void test_visible(void **state)
{
	(void)state;
	struct gg_gpu_info info;
	query(NULL,
	      "gpu uuid=GPU-aaaa1111-0000-0000-0000-000000000000;"
	      "gpu uuid=GPU-aaaa2222-0000-0000-0000-000000000000;"
	      "gpu uuid=GPU-bbbb3333-0000-0000-0000-000000000000 mig=on;"
	      "mig uuid=MIG-cccc0001-0000-0000-0000-000000000000 gi=1 ci=0;"
	      "mig uuid=MIG-cccc0002-0000-0000-0000-000000000000 gi=2 ci=0",
	      &info);
	struct {
		const char *cvd;
		int d0, d1, m0, m1;
		int note;
	} cases[] = {
		{NULL, 1, 1, 1, 1, 0},
		{"", 0, 0, 0, 0, 1},
		{"-1", 0, 0, 0, 0, 1},
		{"NoDevFiles", 0, 0, 0, 0, 1},
		{"1", 0, 1, 0, 0, 0},
		{"1,0", 1, 1, 0, 0, 0},
		{" 1 , 0 ", 1, 1, 0, 0, 0},
		{"0,0", 1, 0, 0, 0, 0},
		{"0,7,1", 1, 0, 0, 0, 1}, /* the list ends at the bad entry */
		{"0,foo,1", 1, 0, 0, 0, 1},
		{"2", 0, 0, 1, 1, 0},            /* a GPU in MIG mode: its MIG devices */
		{"GPU-aaaa2", 0, 1, 0, 0, 0},    /* a unique prefix */
		{"gpu-AAAA2222", 0, 1, 0, 0, 0}, /* case does not matter */
		{"GPU-aaaa", 0, 0, 0, 0, 1},     /* ambiguous */
		{"GPU-", 0, 0, 0, 0, 1},
		{"GPU-bbbb3333-0000-0000-0000-000000000000", 0, 0, 1, 1, 0},
		{"MIG-cccc0002-0000-0000-0000-000000000000", 0, 0, 0, 1, 0},
		{"MIG-cccc0001", 0, 0, 1, 0, 0},
		{"MIG-cccc", 0, 0, 0, 0, 1},
		{"MIG-GPU-bbbb3333-0000-0000-0000-000000000000/2/0", 0, 0, 0, 1, 0},
		{"MIG-GPU-bbbb3333-0000-0000-0000-000000000000/9/0", 0, 0, 0, 0, 1},
		{"MIG-GPU-aaaa1111-0000-0000-0000-000000000000/1/0", 0, 0, 0, 0, 1},
		{"MIG-cccc0001,0", 1, 0, 1, 0, 0},
		{"3", 0, 0, 0, 0, 1},
		{"99999999999", 0, 0, 0, 0, 1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct gg_err err = {0};
		assert_int_equal(gg_gpu_set_visible(&info, cases[i].cvd, &err), 0);
		int got[4] = {info.devs[0].visible, info.devs[1].visible,
			      info.devs[2].migs[0].visible, info.devs[2].migs[1].visible};
		int want[4] = {cases[i].d0, cases[i].d1, cases[i].m0, cases[i].m1};
		if (memcmp(got, want, sizeof got) || !!info.cvd_note != cases[i].note)
			fail_msg("CUDA_VISIBLE_DEVICES='%s': got %d%d%d%d note %s",
				 cases[i].cvd ? cases[i].cvd : "(unset)", got[0], got[1], got[2],
				 got[3], info.cvd_note ? info.cvd_note : "none");
		assert_false(info.devs[2].visible);
		assert_int_equal(info.nvisible, (size_t)(got[0] + got[1] + got[2] + got[3]));
		if (cases[i].cvd)
			assert_string_equal(info.cvd, cases[i].cvd);
		else
			assert_null(info.cvd);
	}
	gg_gpu_set_visible(&info, "0,7,1", NULL);
	assert_string_equal(info.cvd_note, "CUDA_VISIBLE_DEVICES entry '7' names no device: it and "
					   "the entries after it are ignored, as CUDA does");
	gg_gpu_info_clear(&info);

	/* From the environment, through gg_gpu_query. */
	setenv("CUDA_VISIBLE_DEVICES", "GPU-9dc7c6d6", 1);
	query(NULL, "h100x2.conf", &info);
	unsetenv("CUDA_VISIBLE_DEVICES");
	assert_int_equal(info.nvisible, 1);
	assert_true(info.devs[1].visible);
	char *ad = gg_gpu_classad(&info, GG_CLASSAD_NESTED, NULL);
	assert_non_null(strstr(ad, "DetectedGPUs=\"GPU-9dc7c6d6\"\n"));
	free(ad);
	json_t *j = gg_gpu_info_json(&info);
	assert_string_equal(json_string_value(json_object_get(j, "cuda_visible_devices")),
			    "GPU-9dc7c6d6");
	json_decref(j);
	gg_gpu_info_clear(&info);
}

static void test_classad_quoting(void **state)
{
	(void)state;
	struct gg_gpu_info info;
	query(NULL, "gpu name=\"Odd \\Name\" ecc=off", &info);
	char *ad = gg_gpu_classad(&info, GG_CLASSAD_NOT_NESTED, NULL);
	assert_non_null(strstr(ad, "CUDADeviceName=\"Odd \\\\Name\"\n"));
	assert_non_null(strstr(ad, "CUDAECCEnabled=false\n"));
	free(ad);
	gg_gpu_info_clear(&info);
	char b[GG_GPU_STR];
	assert_string_equal(
		gg_gpu_short_id("GPU-ddc1c098-3d53-91c4-a34b-4ab0a2c8e1b7", b, sizeof b),
		"GPU-ddc1c098");
	assert_string_equal(
		gg_gpu_short_id("MIG-0caf1ce3-fcd4-59da-8564-764000e3ace9", b, sizeof b),
		"MIG-0caf1ce3-fcd4-59da-8564-764000e3ace9");
	assert_string_equal(gg_gpu_short_id("GPU-1234", b, sizeof b), "GPU-1234");
}

static void test_cuda_probe(void **state)
{
	(void)state;
	char path[600];
	struct gg_gpu_cuda_probe p;
	struct gg_err err = {0};
	lib(path, sizeof path, NULL, "libcuda.so.1");
	setenv("GG_FAKE_CUDA_NAME", "NVIDIA H100 80GB HBM3", 1);
	assert_int_equal(gg_gpu_cuda_probe(path, 0, &p, &err), 0);
	assert_int_equal(p.bytes, 1 << 20);
	assert_int_equal(p.driver_version, 12040);
	assert_int_equal(p.devices, 1);
	assert_string_equal(p.device, "NVIDIA H100 80GB HBM3");
	assert_non_null(strstr(p.library, "libcuda.so.1"));
	unsetenv("GG_FAKE_CUDA_NAME");

	setenv("GG_FAKE_CUDA", "oom", 1);
	assert_int_equal(gg_gpu_cuda_probe(path, 4096, &p, &err), GG_EFAIL);
	assert_string_equal(err.msg, "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
	setenv("GG_FAKE_CUDA", "corrupt", 1);
	assert_int_equal(gg_gpu_cuda_probe(path, 4096, &p, &err), GG_EFAIL);
	assert_non_null(
		strstr(err.msg, "differs from what was written (first at byte 100 of 4096)"));
	setenv("GG_FAKE_CUDA", "init:100", 1);
	assert_int_equal(gg_gpu_cuda_probe(path, 0, &p, &err), GG_EFAIL);
	assert_string_equal(err.msg,
			    "cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)");
	setenv("GG_FAKE_CUDA", "init:12345", 1);
	assert_int_equal(gg_gpu_cuda_probe(path, 0, &p, &err), GG_EFAIL);
	assert_string_equal(err.msg, "cuInit: CUDA error 12345");
	setenv("GG_FAKE_CUDA", "nodev", 1);
	assert_int_equal(gg_gpu_cuda_probe(path, 0, &p, &err), GG_EFAIL);
	assert_non_null(strstr(err.msg, "no CUDA device visible"));
	unsetenv("GG_FAKE_CUDA");

	lib(path, sizeof path, "nosuch", "libcuda.so.1");
	assert_int_equal(gg_gpu_cuda_probe(path, 0, &p, &err), GG_ENOTFOUND);
	assert_non_null(strstr(err.msg, "is not visible here"));
	/* NVML is not the CUDA driver: a clean error naming the function. */
	lib(path, sizeof path, NULL, "libnvidia-ml.so.1");
	assert_int_equal(gg_gpu_cuda_probe(path, 0, &p, &err), GG_EFAIL);
	assert_non_null(strstr(err.msg, "has no function cuInit"));
}

static void test_runtime_version(void **state)
{
	(void)state;
	int a = 0, b = 0;
	assert_int_equal(gg_gpu_version_parse("12.4.1", &a, &b), 0);
	assert_int_equal(a, 12);
	assert_int_equal(b, 4);
	assert_int_equal(gg_gpu_version_parse("11.8", &a, &b), 0);
	assert_int_equal(gg_gpu_version_parse("v12.0", &a, &b), 0);
	assert_int_equal(a, 12);
	assert_int_equal(gg_gpu_version_parse("12", &a, &b), -1);
	assert_int_equal(gg_gpu_version_parse("12.x", &a, &b), -1);
	assert_int_equal(gg_gpu_version_parse("abc", &a, &b), -1);
	assert_int_equal(gg_gpu_version_parse("12.4abc", &a, &b), -1);
	assert_int_equal(gg_gpu_version_parse(NULL, &a, &b), -1);

	assert_true(gg_gpu_driver_supports(12040, 12, 4));
	assert_true(gg_gpu_driver_supports(12040, 12, 2));
	assert_true(gg_gpu_driver_supports(12040, 11, 8));
	assert_false(gg_gpu_driver_supports(12040, 12, 5));
	assert_false(gg_gpu_driver_supports(11080, 12, 0));

	char v[32], b16[16];
	assert_string_equal(gg_gpu_cuda_version_str(12040, b16, sizeof b16), "12.4");
	assert_string_equal(gg_gpu_cuda_version_str(11080, b16, sizeof b16), "11.8");
	assert_string_equal(gg_gpu_cuda_version_str(0, b16, sizeof b16), "");

	const char *src = NULL;
	struct gg_err err = {0};
	setenv("CUDA_VERSION", "12.4.1", 1);
	assert_int_equal(gg_gpu_cuda_runtime(v, sizeof v, &src, &err), 0);
	assert_string_equal(v, "12.4.1");
	assert_string_equal(src, "CUDA_VERSION");
	setenv("CUDA_VERSION", "twelve", 1);
	assert_int_equal(gg_gpu_cuda_runtime(v, sizeof v, &src, &err), GG_EUSAGE);
	unsetenv("CUDA_VERSION");

	char path[128];
	snprintf(path, sizeof path, "%s/version.json", tmp);
	FILE *f = fopen(path, "w");
	fputs("{\"cuda\": {\"name\": \"CUDA SDK\", \"version\": \"11.8.20220929\"}}\n", f);
	fclose(f);
	setenv("CUDA_HOME", tmp, 1);
	assert_int_equal(gg_gpu_cuda_runtime(v, sizeof v, &src, &err), 0);
	assert_string_equal(v, "11.8.20220929");
	assert_string_equal(src, "$CUDA_HOME/version.json");
	unsetenv("CUDA_HOME");
	if (access("/usr/local/cuda/version.json", F_OK) != 0 &&
	    access("/usr/local/cuda/version.txt", F_OK) != 0) {
		assert_int_equal(gg_gpu_cuda_runtime(v, sizeof v, &src, &err), GG_ENOTFOUND);
		assert_non_null(strstr(err.msg, "no CUDA runtime here"));
	}
}

/* MIG profiles in NVIDIA's spelling; a near miss gets the right one. */
static void test_mig_profile(void **state)
{
	(void)state;
	struct gg_err err = {0};
	static const char *const good[] = {
		"1g.10gb",     "2g.20gb",        "3g.40gb",   "7g.80gb",    "1g.10gb+me",
		"1g.20gb",     "4g.40gb",        "1g.5gb",    "1c.3g.40gb", "1g.24gb-me",
		"2g.48gb+gfx", "1g.24gb+me.all", "3c.3g.40gb"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		int rc = gg_mig_profile_check(good[i], &err);
		if (rc)
			fail_msg("%s: %s", good[i], err.msg);
	}
	static const struct {
		const char *in, *want;
	} near[] = {{"1g10gb", "'1g.10gb'"},       {"1G.10GB", "'1g.10gb'"},
		    {"1g.10g", "'1g.10gb'"},       {"1g_10gb+ME", "'1g.10gb+me'"},
		    {"1c3g.40gb", "'1c.3g.40gb'"}, {"01g.10gb", "'1g.10gb'"},
		    {"1g.10gb ", "'1g.10gb'"}};
	for (size_t i = 0; i < sizeof near / sizeof near[0]; i++) {
		assert_int_equal(gg_mig_profile_check(near[i].in, &err), GG_EUSAGE);
		if (!strstr(err.msg, near[i].want) || !strstr(err.msg, "did you mean"))
			fail_msg("%s: %s", near[i].in, err.msg);
	}
	static const char *const bad[] = {"",           "foo",     "1g",        "1g.gb",
					  "0g.10gb",    "8g.80gb", "1g.0gb",    "1g.10gb+xx",
					  "4c.3g.40gb", "g.10gb",  "1g.99999gb"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (gg_mig_profile_check(bad[i], &err) != GG_EUSAGE)
			fail_msg("'%s' accepted", bad[i]);
		if (strstr(err.msg, "did you mean"))
			fail_msg("'%s': %s", bad[i], err.msg);
	}
	assert_int_equal(gg_mig_profile_check(NULL, &err), GG_EUSAGE);
	/* the table completion offers: each one the check takes as it is, no repeats,
	 * the usual ones there */
	size_t n = 0;
	const char *const *known = gg_mig_profiles(&n);
	assert_true(n >= 30);
	for (size_t i = 0; i < n; i++) {
		if (gg_mig_profile_check(known[i], &err) != 0)
			fail_msg("the table's '%s': %s", known[i], err.msg);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(known[i], known[j]))
				fail_msg("'%s' twice in the table", known[i]);
	}
	static const char *const usual[] = {"1g.10gb", "1g.5gb", "3g.40gb", "7g.80gb",
					    "1g.10gb+me"};
	for (size_t i = 0; i < sizeof usual / sizeof usual[0]; i++) {
		size_t j = 0;
		while (j < n && strcmp(known[j], usual[i]))
			j++;
		if (j == n)
			fail_msg("'%s' not in the table", usual[i]);
	}
}

/* The launcher's record of a session's GPUs (nvidia-smi's CSV from the node) as the
 * provenance's "gpus": the fields --match-dev-gpu and inspect read, and text that is
 * not nvidia-smi's refused whole. */
static json_t *smi(const char *record, int want_rc)
{
	char *out = (char *)"unset";
	struct gg_err err = {0};
	assert_int_equal(gg_gpu_smi_provenance(record, &out, &err), want_rc);
	if (want_rc) {
		assert_null(out);
		assert_non_null(strstr(err.msg, "is not nvidia-smi's (line "));
		return NULL;
	}
	json_t *j = out ? json_loads(out, 0, NULL) : NULL;
	assert_true(!out || j);
	free(out);
	return j;
}

static void test_smi_record(void **state)
{
	(void)state;
	json_t *j = smi(
		"# CUDA_VISIBLE_DEVICES=0,2\n"
		"0, GPU-4a6bd2c1-0e57-4c5f-9d3c-3bd4d1a8d001, NVIDIA A100-SXM4-40GB, 40960, 8.0, "
		"550.54.15\n"
		"2, GPU-4a6bd2c1-0e57-4c5f-9d3c-3bd4d1a8d003, NVIDIA A100-SXM4-40GB, 40960, [N/A], "
		"550.54.15\n",
		0);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "cuda_visible_devices")), "0,2");
	assert_string_equal(json_string_value(json_object_get(j, "driver_version")), "550.54.15");
	assert_int_equal(json_integer_value(json_object_get(j, "visible")), 2);
	json_t *g = json_object_get(j, "gpus");
	assert_int_equal(json_array_size(g), 2);
	json_t *d = json_array_get(g, 0);
	assert_string_equal(json_string_value(json_object_get(d, "name")), "NVIDIA A100-SXM4-40GB");
	assert_string_equal(json_string_value(json_object_get(d, "compute_capability")), "8.0");
	assert_int_equal(json_integer_value(json_object_get(d, "memory_total_mb")), 40960);
	assert_int_equal(json_integer_value(json_object_get(d, "memory_total")), 40960LL << 20);
	d = json_array_get(g, 1);
	assert_int_equal(json_integer_value(json_object_get(d, "index")), 2);
	assert_true(json_is_null(json_object_get(d, "compute_capability")));
	json_decref(j);
	/* a batch system that names the GPU by UUID (HTCondor) */
	j = smi("# CUDA_VISIBLE_DEVICES=GPU-4a6bd2c1-0e57\n"
		"1, GPU-4a6bd2c1-0e57, NVIDIA H100 80GB HBM3, 81559, 9.0, 550.54.15\n",
		0);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "cuda_visible_devices")),
			    "GPU-4a6bd2c1-0e57");
	json_decref(j);
	/* nothing recorded: no GPU, a MIG device, no nvidia-smi on the node */
	assert_null(smi("", 0));
	assert_null(smi(NULL, 0));
	assert_null(smi("# CUDA_VISIBLE_DEVICES=0\n", 0));
	/* anything else is refused whole */
	static const char *const bad[] = {
		"0, GPU-4a6b, NVIDIA A100, 40960, 8.0, 550.54.15\n", /* no header */
		"# CUDA_VISIBLE_DEVICES=0;reboot\n",
		"# CUDA_VISIBLE_DEVICES=0\n0, GPU-4a6b, NVIDIA \x1b[2JA100, 40960, 8.0, 550.54.15\n",
		"# CUDA_VISIBLE_DEVICES=0\n0, GPU-4a6b, NVIDIA A100, 40960, 8.0\n",
		"# CUDA_VISIBLE_DEVICES=0\n0, GPU-4a6b, NVIDIA, A100, 40960, 8.0, 550.54.15\n",
		"# CUDA_VISIBLE_DEVICES=0\n0, GPU-4a6b, NVIDIA A100, 40 GiB, 8.0, 550.54.15\n",
		"# CUDA_VISIBLE_DEVICES=0\n0, GPU-4a6b, NVIDIA A100, 40960, 8.x, 550.54.15\n",
		"# CUDA_VISIBLE_DEVICES=0\n0, MIG-4a6b, NVIDIA A100, 40960, 8.0, 550.54.15\n",
		"# CUDA_VISIBLE_DEVICES=0\nx, GPU-4a6b, NVIDIA A100, 40960, 8.0, 550.54.15\n",
		"# CUDA_VISIBLE_DEVICES=0\n0, GPU-4a6b, NVIDIA A100, 40960, 8.0, 550\"\n",
		"# CUDA_VISIBLE_DEVICES=0\nNo devices were found\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		smi(bad[i], GG_EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_library), cmocka_unit_test(test_missing_symbol),
		cmocka_unit_test(test_init_errors),     cmocka_unit_test(test_no_device),
		cmocka_unit_test(test_a100_mig),        cmocka_unit_test(test_h100x2),
		cmocka_unit_test(test_consumer),        cmocka_unit_test(test_errors),
		cmocka_unit_test(test_old_driver),      cmocka_unit_test(test_visible),
		cmocka_unit_test(test_slurm_node),      cmocka_unit_test(test_classad_quoting),
		cmocka_unit_test(test_cuda_probe),      cmocka_unit_test(test_runtime_version),
		cmocka_unit_test(test_mig_profile),     cmocka_unit_test(test_smi_record),
	};
	return cmocka_run_group_tests_name("gpu", tests, setup, teardown);
}
