/* lib/doctor: the public part is include/gridgpu/doctor.h; here the handle's
 * insides, shared by the checks (creds.c, site.c, gpu.c) and the unit test. */
#ifndef GG_LIB_DOCTOR_H
#define GG_LIB_DOCTOR_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "gridgpu/doctor.h"

#define GG_DOCTOR_VALID   (2 * 3600)
#define GG_DOCTOR_CA_SOON (30 * 86400) /* a CA that ends within 30 days is not current */

struct gg_doctor_check {
	char *id, *title;
	enum gg_doctor_status st;
	char *detail, *fix;
};

struct gg_doctor {
	/* what to check */
	char *config_path, *site_name;
	int64_t valid;
	struct gg_engine *engine;
	gg_doctor_progress_fn progress;
	void *progress_ud;
	/* Tests: the NVML and CUDA driver files (NULL: the dynamic linker's
	 * search), and the deadline of ssh -V and apptainer --version. */
	const char *nvml_lib, *cuda_lib;
	int version_ms;
	/* found on the way */
	int ran;
	struct gg_config *cfg;
	const struct gg_site *site;
	const char *auth_kind; /* "proxy" or "token" */
	char *ca_dir;
	char *ssh_path;
	/* the results */
	struct gg_doctor_check *c;
	size_t n, cap;
	int oom;
};

/* Add a check's result; detail and fix are taken (malloc'd, may be NULL),
 * the progress callback told. */
void gg_doctor_add(struct gg_doctor *d, const char *id, const char *title, enum gg_doctor_status st,
		   char *detail, char *fix);

/* Run argv for at most ms: its status as the checks read it (-1: it could not
 * be run; exit status; GG_RUN_SIGNAL + a signal, the deadline's too) and the
 * last line it wrote, in line (len bytes). */
int gg_doctor_exec(char *const argv[], int ms, char *line, size_t len);

/* The checks, in the order they run. */
void gg_doctor_check_config(struct gg_doctor *d);
void gg_doctor_check_proxy(struct gg_doctor *d);
void gg_doctor_check_token(struct gg_doctor *d);
void gg_doctor_check_ca_dir(struct gg_doctor *d);
void gg_doctor_check_ce(struct gg_doctor *d);
void gg_doctor_check_tool(struct gg_doctor *d, const char *name);
void gg_doctor_check_jumps(struct gg_doctor *d);
void gg_doctor_check_session(struct gg_doctor *d);

#endif
