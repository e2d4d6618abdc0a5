/* The node's contract (node.def) and what is generated from it: the launcher's
 * arguments, the paths and commands of the session directory, freeze --session's
 * stream. */
#include "node/node.h"

#include <stdlib.h>
#include <string.h>

#include "gridgpu/ce.h"

#define GG_NODE_PATH(id, path, help)
#define GG_NODE_FIELD(name, type, help)
#define GG_NODE_ENV(id, name, own, help)
#define GG_NODE_FLAG(id, letter, arg, help) [GG_NF_##id] = {letter, arg, help},
static const struct gg_node_flag_info flags[] = {
#include "node/node.def"
};
#undef GG_NODE_FLAG
#undef GG_NODE_PATH
#define GG_NODE_FLAG(id, letter, arg, help)
#define GG_NODE_PATH(id, path, help) [GG_NP_##id] = path,
static const char *const paths[] = {
#include "node/node.def"
};
#undef GG_NODE_PATH
#undef GG_NODE_FIELD
#define GG_NODE_PATH(id, path, help)
#define GG_NODE_FIELD(name, type, help) {#name, type},
static const struct gg_node_field_info fields[] = {
#include "node/node.def"
};
#undef GG_NODE_FIELD
#undef GG_NODE_ENV
#define GG_NODE_FIELD(name, type, help)
#define GG_NODE_ENV(id, name, own, help) [GG_NE_##id] = {name, own},
static const struct {
	const char *name;
	int own;
} envs[] = {
#include "node/node.def"
};
#undef GG_NODE_FLAG
#undef GG_NODE_PATH
#undef GG_NODE_FIELD
#undef GG_NODE_ENV
#define GG_NODE_FLAG(id, letter, arg, help)
#define GG_NODE_PATH(id, path, help)
#define GG_NODE_FIELD(name, type, help)
#define GG_NODE_ENV(id, name, own, help)
#define GG_NODE_WFLAG(id, letter, arg, help) [GG_NW_##id] = {letter, arg, help},
static const struct gg_node_flag_info wflags[] = {
#include "node/node.def"
};
#undef GG_NODE_FLAG
#undef GG_NODE_PATH
#undef GG_NODE_FIELD
#undef GG_NODE_ENV
#undef GG_NODE_WFLAG

const struct gg_node_flag_info *gg_node_wflag_info(enum gg_node_wflag f)
{
	return (unsigned)f < GG_NW_COUNT ? &wflags[f] : NULL;
}

const struct gg_node_flag_info *gg_node_flag_info(enum gg_node_flag f)
{
	return (unsigned)f < GG_NF_COUNT ? &flags[f] : NULL;
}

const char *gg_node_path(enum gg_node_path p)
{
	return (unsigned)p < GG_NP_COUNT ? paths[p] : NULL;
}

const char *gg_node_env(enum gg_node_env e)
{
	return (unsigned)e < GG_NE_COUNT ? envs[e].name : NULL;
}

int gg_node_env_own(enum gg_node_env e)
{
	return (unsigned)e < GG_NE_COUNT && envs[e].own;
}

const struct gg_node_field_info *gg_node_fields(size_t *n)
{
	*n = sizeof fields / sizeof *fields;
	return fields;
}

/* getopts' option string of a script's options (n of them). */
static char *optstring(const struct gg_node_flag_info *t, size_t n)
{
	char *s = malloc(2 * n + 1), *o = s;
	for (size_t i = 0; s && i < n; i++) {
		*o++ = t[i].letter;
		if (t[i].arg)
			*o++ = ':';
	}
	if (s)
		*o = '\0';
	return s;
}

char *gg_node_optstring(void)
{
	return optstring(flags, GG_NF_COUNT);
}

char *gg_node_wrapper_optstring(void)
{
	return optstring(wflags, GG_NW_COUNT);
}

/* "-x" (then value) of a script's option fi in a job description's arguments. */
static int jd_opt(struct gg_jobdesc *jd, const struct gg_node_flag_info *fi, const char *script,
		  const char *value, struct gg_err *err)
{
	if (!fi || !fi->arg != !value)
		return gg_err_set(err, GG_EFAIL, "the %s's option %c %s an operand", script,
				  fi ? fi->letter : '?', value ? "takes no" : "needs");
	char opt[3] = {'-', fi->letter, '\0'};
	int rc = gg_jd_arg(jd, opt, err);
	return rc == 0 && value ? gg_jd_arg(jd, value, err) : rc;
}

int gg_node_jd_arg(struct gg_jobdesc *jd, enum gg_node_flag f, const char *value,
		   struct gg_err *err)
{
	return jd_opt(jd, gg_node_flag_info(f), "launcher", value, err);
}

int gg_node_jd_warg(struct gg_jobdesc *jd, enum gg_node_wflag f, const char *value,
		    struct gg_err *err)
{
	return jd_opt(jd, gg_node_wflag_info(f), "batch wrapper", value, err);
}

char *gg_node_sd_path(enum gg_node_path p)
{
	return gg_strdup_printf("${" GG_NODE_SD_VAR ":-/nonexistent}/%s", gg_node_path(p));
}

char *gg_node_sh_quote(const char *s)
{
	char *q = malloc(4 * strlen(s) + 3), *o = q;
	if (!q)
		return NULL;
	*o++ = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *p;
		}
	}
	*o++ = '\'';
	*o = '\0';
	return q;
}

/* Run outside the session's container (GG_NODE_MARK): the record is in the session
 * directory, which the sandbox does not show. Only a regular file is read, never a
 * link, FIFO or device a process of the session may have put there: opened without
 * blocking (dd iflag=nonblock: a FIFO swapped in after the test reads as empty),
 * 64 KiB at most, in 20 s at most. */
char *gg_node_gpus_command(void)
{
	return gg_node_read_command(GG_NP_GPUS);
}

char *gg_node_read_command(enum gg_node_path p)
{
	char *f = gg_node_sd_path(p);
	char *cmd = f ? gg_strdup_printf(GG_NODE_MARK
					 " f=%s; "
					 "{ [ -f \"$f\" ] && [ ! -h \"$f\" ]; } || exit 0; "
					 "t=$(command -v timeout) || t=''; "
					 "${t:+\"$t\" 20} dd if=\"$f\" bs=65536 count=1 "
					 "iflag=nonblock 2>/dev/null; exit 0",
					 f)
		      : NULL;
	free(f);
	return cmd;
}

int gg_node_session_ready(const struct gg_record *r, struct gg_err *err)
{
	if (r->kind != GG_REC_SESSION)
		return gg_err_set(err, GG_ENOTFOUND, "is a batch job, not a session");
	if (gg_sess_state_ended(r->state))
		return gg_err_set(err, GG_ENOTFOUND,
				  "the session %s: its sandbox is gone with it (use a live "
				  "session; 'gridgpu request' starts one)",
				  gg_sess_state_phrase(r->state));
	if (r->state != GG_S_READY)
		return gg_err_set(
			err, GG_ENOTFOUND,
			"the session %s, not ready yet: 'gridgpu connect %s' waits for it",
			gg_sess_state_phrase(r->state), r->name);
	return 0;
}
