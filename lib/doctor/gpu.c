/* The doctor's checks inside a session (or wherever NVML answers): the GPU,
 * the driver against the CUDA runtime, the container runtime, an allocation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/run.h"
#include "doctor/doctor.h"
#include "gpu/gpu.h"

#define S(...) gg_strdup_printf(__VA_ARGS__)

static char *visible_names(const struct gg_gpu_info *info)
{
	const char *names[64];
	int counts[64];
	size_t n = 0;
	for (size_t i = 0; i < info->ndevs; i++) {
		const struct gg_gpu_dev *dv = &info->devs[i];
		for (size_t k = 0; k <= dv->nmigs; k++) {
			const char *nm = k < dv->nmigs ? dv->migs[k].name : dv->name;
			int vis = k < dv->nmigs ? dv->migs[k].visible : dv->visible;
			if (!vis)
				continue;
			size_t j = 0;
			while (j < n && strcmp(names[j], nm))
				j++;
			if (j == n && n < 64) {
				names[n] = nm;
				counts[n++] = 0;
			}
			if (j < n)
				counts[j]++;
		}
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	for (size_t j = 0; j < n; j++) {
		fprintf(f, "%s%s", j ? ", " : "", names[j][0] ? names[j] : "?");
		if (counts[j] > 1)
			fprintf(f, " x%d", counts[j]);
	}
	fclose(f);
	return buf;
}

/* The first error NVML reports for a visible GPU or MIG device, or NULL. */
static const char *first_gpu_error(const struct gg_gpu_info *info)
{
	const char *bad = NULL;
	for (size_t i = 0; i < info->ndevs && !bad; i++) {
		const struct gg_gpu_dev *dv = &info->devs[i];
		if (dv->visible && dv->error)
			bad = dv->error;
		for (size_t k = 0; k < dv->nmigs && !bad; k++)
			if (dv->migs[k].visible && dv->migs[k].error)
				bad = dv->migs[k].error;
	}
	return bad;
}

/* GPU visible: 1 when this process has a usable one. */
static int check_gpu_visible(struct gg_doctor *d, int nvml, const struct gg_gpu_info *info,
			     const struct gg_err *err)
{
	char cv[16];
	if (nvml < 0) {
		gg_doctor_add(
			d, "gpu", "GPU visible", GG_DOCTOR_FAIL, S("%s", err->msg),
			nvml == GG_ENOTFOUND
				? S("this job runs on a node without the NVIDIA driver, or in a container "
				    "started without --nv: request GPUs ('gridgpu request --gpus 1') on "
				    "a site whose gpu_queue has them")
				: S("NVML does not answer: tell the site (nvidia-smi on the node shows "
				    "the same)"));
		return 0;
	}
	if (info->nvisible == 0) {
		gg_doctor_add(
			d, "gpu", "GPU visible", GG_DOCTOR_FAIL,
			S("%zu NVIDIA device%s on this node, none usable by this process%s%s%s",
			  info->ndevs, info->ndevs == 1 ? "" : "s",
			  info->cvd ? " (CUDA_VISIBLE_DEVICES=" : "", info->cvd ? info->cvd : "",
			  info->cvd ? ")" : ""),
			info->ndevs
				? S("the batch system sets CUDA_VISIBLE_DEVICES to the GPUs it gave "
				    "the job: ask for some with 'gridgpu request --gpus N' (or --mig "
				    "PROFILE)%s%s",
				    info->cvd_note ? "; " : "",
				    info->cvd_note ? info->cvd_note : "")
				: S("request GPUs ('gridgpu request --gpus 1') on a GPU queue"));
		return 0;
	}
	const char *bad = first_gpu_error(info);
	char *names = visible_names(info);
	if (bad)
		gg_doctor_add(
			d, "gpu", "GPU visible", GG_DOCTOR_FAIL,
			S("%zu usable (%s), but NVML reports %s", info->nvisible,
			  names ? names : "?", bad),
			S("the GPU reports errors: tell the site (nvidia-smi -q on the node) and "
			  "try another node"));
	else
		gg_doctor_add(d, "gpu", "GPU visible", GG_DOCTOR_OK,
			      S("%zu usable: %s (driver %s, CUDA %s)", info->nvisible,
				names ? names : "?", info->driver[0] ? info->driver : "?",
				gg_gpu_cuda_version_str(info->cuda_driver, cv, sizeof cv)),
			      NULL);
	free(names);
	return 1;
}

/* Driver vs runtime: does the driver support the CUDA the environment needs? */
static void check_cuda_compat(struct gg_doctor *d, int nvml, const struct gg_gpu_info *info)
{
	char cv[16], rt[64];
	/* the hint below shows it too: made before the arguments are evaluated */
	gg_gpu_cuda_version_str(info->cuda_driver, cv, sizeof cv);
	const char *src = NULL;
	struct gg_err e2 = {0};
	int rrc = gg_gpu_cuda_runtime(rt, sizeof rt, &src, &e2);
	int maj, min;
	if (rrc == GG_ENOTFOUND)
		gg_doctor_add(d, "cuda-compat", "driver vs CUDA", GG_DOCTOR_SKIP, S("%s", e2.msg),
			      NULL);
	else if (rrc < 0)
		gg_doctor_add(d, "cuda-compat", "driver vs CUDA", GG_DOCTOR_FAIL, S("%s", e2.msg),
			      S("set CUDA_VERSION to the CUDA version of the image (e.g. 12.4.1)"));
	else if (nvml < 0 || !info->cuda_driver)
		gg_doctor_add(d, "cuda-compat", "driver vs CUDA", GG_DOCTOR_SKIP,
			      S("the environment needs CUDA %s (%s); no driver version to compare",
				rt, src),
			      NULL);
	else if (gg_gpu_version_parse(rt, &maj, &min) == 0 &&
		 gg_gpu_driver_supports(info->cuda_driver, maj, min))
		gg_doctor_add(d, "cuda-compat", "driver vs CUDA", GG_DOCTOR_OK,
			      S("driver %s supports CUDA %s, the environment needs %s (%s)",
				info->driver,
				gg_gpu_cuda_version_str(info->cuda_driver, cv, sizeof cv), rt, src),
			      NULL);
	else
		gg_doctor_add(
			d, "cuda-compat", "driver vs CUDA", GG_DOCTOR_FAIL,
			S("driver %s supports CUDA up to %s, the environment needs %s (%s)",
			  info->driver, gg_gpu_cuda_version_str(info->cuda_driver, cv, sizeof cv),
			  rt, src),
			S("use an image built for CUDA %s or older, or a site or queue with a newer "
			  "driver; within one major version CUDA's minor version compatibility may "
			  "still run code that needs no PTX JIT",
			  cv));
}

static void check_container(struct gg_doctor *d, int in_session, int usable)
{
	const char *inside = getenv("APPTAINER_CONTAINER");
	if (!inside || !*inside)
		inside = getenv("SINGULARITY_CONTAINER");
	if (inside && *inside) {
		gg_doctor_add(d, "container", "container runtime", GG_DOCTOR_OK,
			      S("inside the container %s%s", inside,
				usable ? " (the GPU came through --nv)" : ""),
			      NULL);
	} else {
		char *rtp = gg_which("apptainer");
		if (!rtp)
			rtp = gg_which("singularity");
		if (rtp) {
			char *argv[] = {rtp, "--version", NULL}, ver[128];
			if (gg_doctor_exec(argv, d->version_ms, ver, sizeof ver) != 0)
				ver[0] = '\0';
			gg_doctor_add(d, "container", "container runtime", GG_DOCTOR_OK,
				      S("%s%s%s%s: images run with 'exec --nv'", rtp,
					ver[0] ? " (" : "", ver, ver[0] ? ")" : ""),
				      NULL);
			free(rtp);
		} else if (in_session) {
			gg_doctor_add(
				d, "container", "container runtime", GG_DOCTOR_FAIL,
				S("no apptainer or singularity on PATH"),
				S("sessions with --image need apptainer on the worker: run without "
				  "--image, or ask the site to install apptainer"));
		} else {
			gg_doctor_add(
				d, "container", "container runtime", GG_DOCTOR_SKIP,
				S("no apptainer or singularity on PATH (needed on the worker, not here)"),
				NULL);
		}
	}
}

/* A tiny allocation on the first usable GPU. */
static void check_gpu_alloc(struct gg_doctor *d, int usable)
{
	if (!usable) {
		gg_doctor_add(d, "gpu-alloc", "GPU allocation", GG_DOCTOR_SKIP, S("no usable GPU"),
			      NULL);
		return;
	}
	struct gg_gpu_cuda_probe p;
	struct gg_err e3 = {0};
	int prc = gg_gpu_cuda_probe(d->cuda_lib, 0, &p, &e3);
	if (prc == 0) {
		char sz[32];
		gg_doctor_add(
			d, "gpu-alloc", "GPU allocation", GG_DOCTOR_OK,
			S("%s written to and read back from %s (CUDA device 0 of %d) in %.0f ms",
			  gg_size_format(p.bytes, sz, sizeof sz), p.device[0] ? p.device : "?",
			  p.devices, p.ms),
			NULL);
	} else if (prc == GG_ENOTFOUND) {
		gg_doctor_add(
			d, "gpu-alloc", "GPU allocation", GG_DOCTOR_FAIL, S("%s", e3.msg),
			S("the driver's libcuda.so.1 must be visible: inside a container start "
			  "it with --nv (apptainer exec --nv), or add its directory to "
			  "LD_LIBRARY_PATH"));
	} else {
		gg_doctor_add(
			d, "gpu-alloc", "GPU allocation", GG_DOCTOR_FAIL, S("%s", e3.msg),
			S("the GPU does not work from this process: tell the site (the node's "
			  "driver or GPU is at fault) and try another node"));
	}
}

void gg_doctor_check_session(struct gg_doctor *d)
{
	const char *sess = getenv("GRIDGPU_SESSION");
	int in_session = sess && *sess;
	struct gg_err err = {0};
	struct gg_gpu *g = NULL;
	struct gg_gpu_info info;
	memset(&info, 0, sizeof info);
	int nvml = gg_gpu_open(d->nvml_lib, &g, &err);
	if (nvml == 0) {
		nvml = gg_gpu_query(g, &info, &err);
		gg_gpu_close(g);
	}
	if (!in_session && nvml == GG_ENOTFOUND) {
		const char *why =
			"not inside a session (GRIDGPU_SESSION unset) and no NVIDIA driver "
			"here";
		gg_doctor_add(d, "gpu", "GPU visible", GG_DOCTOR_SKIP, S("%s", why), NULL);
		gg_doctor_add(d, "cuda-compat", "driver vs CUDA", GG_DOCTOR_SKIP, S("%s", why),
			      NULL);
		gg_doctor_add(d, "container", "container runtime", GG_DOCTOR_SKIP, S("%s", why),
			      NULL);
		gg_doctor_add(d, "gpu-alloc", "GPU allocation", GG_DOCTOR_SKIP, S("%s", why), NULL);
		return;
	}
	int usable = check_gpu_visible(d, nvml, &info, &err);
	check_cuda_compat(d, nvml, &info);
	check_container(d, in_session, usable);
	check_gpu_alloc(d, usable);
	gg_gpu_info_clear(&info);
}
