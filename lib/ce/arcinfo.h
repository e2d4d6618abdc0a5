/* A-REX's info documents remembered between commands (arcinfo.c). */
#ifndef GG_CE_ARCINFO_H
#define GG_CE_ARCINFO_H

#include "ce/ce.h"

#define GG_ARC_TIME_MAX 40

/* How the CE is asked (arc.c: POST jobs?action=info; the tests: a fake). */
struct gg_arc_info_ops {
	/* the CreationTime of job id's document (in XML: A-REX's JSON blanks
	 * attributes) into *time (malloc'd; NULL when it has none) */
	int (*run)(void *ud, const char *id, char **time, struct gg_err *err);
	/* the info of ids: results[i] for ids[i] (GG_CE_UNKNOWN: no document) */
	int (*ask)(void *ud, const char *const *ids, size_t n, struct gg_ce_result **results,
		   struct gg_err *err);
	void *ud;
};

/* The info of ids (results[i] for ids[i], as gg_ce_lrms_status gives it),
 * through the answers remembered in the file at path (NULL: none kept): one
 * job's document time asked first (a remembered job's); when it is the
 * remembered run of A-REX's infoprovider, the remembered answers stand and
 * only the others are asked, else all are, and remembered as of that run. The
 * file is written only when what it remembers changed. An error when the ask
 * fails (nothing is answered from the file then). */
int gg_arc_info_asked(const char *path, const char *const *ids, size_t n,
		      const struct gg_arc_info_ops *ops, struct gg_ce_result **results,
		      struct gg_err *err);

/* The first ComputingActivity's CreationTime in A-REX's XML answer to
 * jobs?action=info (len bytes at xml) into out: 1, else 0 (none, or not the
 * form of a time). */
int gg_arc_info_time(const char *xml, size_t len, char out[GG_ARC_TIME_MAX]);

#endif
