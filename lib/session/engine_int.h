/* What the engine's files share (not part of the engine's API). */
#ifndef GG_SESSION_ENGINE_INT_H
#define GG_SESSION_ENGINE_INT_H

#include "session/engine.h"

/* Tell e->note, formatted. */
void gg_engine_notef(struct gg_engine *e, enum gg_note kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Tell e->fail (what formatted); returns err->code. */
int gg_engine_failf(struct gg_engine *e, const struct gg_err *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* 1 when the stored record is killed, or gone (killed and cleaned). */
int gg_engine_killed(struct gg_engine *e, const char *name);

/* gg_engine_clean of one ended record, its CE's error in err (not told to
 * e->fail): the record is kept when the CE could not clean the job. */
int gg_engine_clean_one(struct gg_engine *e, struct gg_record *r, struct gg_err *err);

/* Where a job's plain output i (s->outputs[i]) goes at site: under the site's
 * output_base (a name, not a pattern, and the site has one): the URL,
 * malloc'd; NULL when it stays in the CE's session directory. */
char *gg_job_output_dest(const struct gg_job_spec *s, const struct gg_site *site, int i);

#endif
