/* The slurm+ssh backend's job script parts (slurmstage.c): sh quoting, and
 * the staging of storage URLs on the compute node (issue 49). */
#ifndef GG_CE_SLURMSTAGE_H
#define GG_CE_SLURMSTAGE_H

#include <stdio.h>

#include "gridgpu/ce.h"

/* In the job's directory: the user's proxy (0600, only while the staging
 * needs it), a failed transfer's one line (the job's failure), a transfer's
 * output while it runs. */
#define GG_SLURM_PROXY     ".gridgpu-proxy"
#define GG_SLURM_STAGE_ERR ".gridgpu-stage-error"
#define GG_SLURM_STAGE_LOG ".gridgpu-stage-log"
/* Login staging: the outputs' script, the mark of its start, of its end. */
#define GG_SLURM_STAGE_OUT ".gridgpu-stage-out.sh"
#define GG_SLURM_STAGING   ".gridgpu-staging"
#define GG_SLURM_STAGED    ".gridgpu-staged"

/* v quoted for sh ('...', a ' as '\''), into f. */
void gg_slurm_sq(FILE *f, const char *v);
/* 1 when the job names a storage URL (an input's source, an output's URL). */
int gg_slurm_stage_named(const struct gg_jobdesc *jd);
/* Each storage URL the job names, checked as the ARC path checks them
 * (gg_data_url_parse): GG_EUSAGE naming the file. */
int gg_slurm_stage_check(const struct gg_jobdesc *jd, struct gg_err *err);
/* The script's lines before the command (cwd: the job's directory): the proxy
 * and CA directory in the environment, the inputs fetched from storage. */
void gg_slurm_stage_in(FILE *f, const struct gg_jobdesc *jd);
/* The lines after it (its status in $gg_rc): the outputs put to storage when
 * it succeeded, then the proxy removed. */
void gg_slurm_stage_out(FILE *f, const struct gg_jobdesc *jd);
/* Login staging (slurm-stage = login), part of the submit's command on the
 * login node, the job's files in directory "$t": the inputs fetched there (the
 * proxy removed after when no output needs it), and the outputs' script
 * GG_SLURM_STAGE_OUT written beside them; each begins " && ". -1: out of
 * memory. */
int gg_slurm_stage_login(FILE *f, const struct gg_jobdesc *jd);
/* 1 when the job puts an output to storage. */
int gg_slurm_stage_outputs(const struct gg_jobdesc *jd);

#endif
