/* Why Slurm holds a job in its queue, in the user's words: the command run on
 * the site's Slurm login node (the last jump host), the parser of its output
 * (outside text) and the phrase made of it. */
#ifndef GG_CE_SLURMQ_H
#define GG_CE_SLURMQ_H

#include <stddef.h>

#include "gridgpu/core.h"

/* A job in Slurm's queue as squeue says it (each field printable ASCII). */
struct gg_slurm_job {
	char id[32];
	char state[24]; /* PENDING, RUNNING... */
	char partition[64];
	long long priority;
	char start[32];   /* the expected start ("2026-12-02T05:30:00"), or "" */
	char gres[128];   /* what it asks per node ("gres/gpu:3"), or "" */
	char reason[160]; /* "Resources", "ReqNodeNotAvail, UnavailableNodes:n1" */
	int position;     /* 1 = next of its partition's pending jobs; 0 = not known */
};

/* Exit status of the command when the host has no squeue: not a Slurm login
 * node. */
#define GG_SLURMQ_NO_SQUEUE 97

/* The command that asks the login node about the Slurm jobs ids (n of them,
 * each digits, an array's "12_3" allowed): their state and reason, then the
 * partition and priority of every pending job (for the positions). NULL when
 * an id is not a Slurm job id. malloc'd. */
char *gg_slurmq_command(const char *const *ids, size_t n);
/* 1 when id is a Slurm job id the command may carry. */
int gg_slurmq_id_ok(const char *id);
/* The command's output (text, len bytes, need not be NUL-terminated): the
 * jobs of the first part, with their positions counted from the second; lines
 * that do not parse are skipped. *out malloc'd (NULL when n is 0). */
int gg_slurmq_parse(const char *text, size_t len, struct gg_slurm_job **out, size_t *n,
		    struct gg_err *err);
/* The job's wait in the user's words, Slurm's code kept: "waiting for free
 * GPUs (Slurm: Resources), 2nd in line; it asks gres/gpu:3". NULL when the job
 * is not pending. malloc'd. */
char *gg_slurmq_phrase(const struct gg_slurm_job *j);
/* A-REX's OtherMessages entry that is the batch system's word ("LRMS: ...",
 * as its non-Slurm modules write it), as "the batch system says: ...", or
 * NULL. malloc'd. */
char *gg_lrms_message_phrase(const char *msg);

#endif
