/* node:/PATH checked before anything is sent, where the site allows it: a site
 * whose profile says image-check login has a login host (its last jump host)
 * that sees the nodes' files, so a path that is not there is refused here
 * rather than by the node after the queue wait. Over the same libssh2
 * connection as connect's, through the jump hosts with their pinned keys. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"
#include "node/node.h"
#include "ssh/ssh.h"

/* the check's exit statuses: the path is missing, or there but not readable */
enum { NODE_MISSING = 3, NODE_UNREADABLE = 4 };

/* The site's jump hosts as hops (their identity and known_hosts). */
static int jump_hops(const struct gg_site *site, struct gg_ssh_jump *jp, struct gg_ssh_hop *hops,
		     char names[][32], struct gg_err *err)
{
	for (int k = 0; k < site->njumps; k++) {
		if (gg_ssh_jump_parse(site->jumps[k], &jp[k], err) < 0)
			return gg_err_prefix(err, "jump host %d of site %s", k + 1, site->name);
		snprintf(names[k], sizeof names[k], "jump host %d", k + 1);
		hops[k] = (struct gg_ssh_hop){.host = jp[k].host,
					      .port = jp[k].port,
					      .user = jp[k].user[0] ? jp[k].user : NULL,
					      .name = names[k],
					      .identity = site->identity,
					      .known_hosts = site->known_hosts};
	}
	return 0;
}

/* Run the test of path on the login host: *status is its exit status. */
static int run_check(const struct gg_site *site, const char *path, const struct gg_log *log,
		     int *status, char **errtext, struct gg_err *err)
{
	struct gg_ssh_jump jp[GG_MAX_JUMPS];
	struct gg_ssh_hop hops[GG_MAX_JUMPS];
	char names[GG_MAX_JUMPS][32];
	struct gg_ssh_masters ms;
	int rc = jump_hops(site, jp, hops, names, err);
	if (rc == 0)
		rc = gg_ssh_hops_masters(site, hops, &ms, err);
	if (rc < 0)
		return rc;
	hops[0].log = log;
	char *q = gg_node_sh_quote(path);
	char *cmd = q ? gg_strdup_printf("if [ ! -e %s ]; then exit %d; elif [ ! -r %s ]; then "
					 "exit %d; fi",
					 q, NODE_MISSING, q, NODE_UNREADABLE)
		      : NULL;
	free(q);
	if (!cmd)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	struct gg_ssh_conn *c = NULL;
	rc = gg_ssh_connect(hops, (size_t)site->njumps, 0, &c, NULL, err);
	char *out = NULL;
	size_t len;
	if (rc == 0)
		rc = gg_ssh_exec_capture(c, cmd, 4096, &out, &len, status, errtext, err);
	free(out);
	free(cmd);
	gg_ssh_disconnect(c);
	return rc;
}

/* What the login host's answer means for the image. */
static int verdict(const struct gg_site *site, const char *image, int status, const char *errtext,
		   struct gg_err *err)
{
	const char *login = site->jumps[site->njumps - 1];
	if (status == 0)
		return 0;
	if (status == NODE_MISSING)
		return gg_err_set(err, GG_EUSAGE,
				  "image '%s': no such file on site %s's nodes (looked on its "
				  "login host %s): check the path, or give an image from here",
				  image, site->name, login);
	if (status == NODE_UNREADABLE)
		return gg_err_set(err, GG_EUSAGE,
				  "image '%s': there on site %s's nodes but not readable by you "
				  "(looked on its login host %s): ask the site's admins, or give "
				  "an image from here",
				  image, site->name, login);
	char *why = errtext ? gg_str_printable(errtext, strcspn(errtext, "\n")) : NULL;
	int rc = gg_err_set(err, GG_EFAIL,
			    "image '%s': site %s's login host %s could not check it (exit %d%s%s): "
			    "'gridgpu site set %s image-check none' skips the check",
			    image, site->name, login, status, why ? ": " : "", why ? why : "",
			    site->name);
	free(why);
	return rc;
}

int gg_image_node_check(struct gg_engine *e, const struct gg_site *site, const char *image,
			struct gg_err *err)
{
	size_t mark = strlen(GG_IMAGE_NODE_MARK);
	if (!image || strncmp(image, GG_IMAGE_NODE_MARK, mark) || !site || !site->image_check ||
	    strcmp(site->image_check, "login"))
		return 0; /* not on the node, or the site does not allow the check */
	if (site->njumps == 0)
		return gg_err_set(err, GG_EUSAGE,
				  "site %s: image-check login needs its jump hosts (the last one "
				  "is the login host): 'gridgpu site set %s jump USER@HOST'",
				  site->name, site->name);
	int status = -1;
	char *errtext = NULL;
	int rc = run_check(site, image + mark, e ? &e->log : NULL, &status, &errtext, err);
	if (rc < 0)
		gg_err_prefix(err, "image '%s': checking it on site %s's login host", image,
			      site->name);
	else
		rc = verdict(site, image, status, errtext, err);
	free(errtext);
	return rc;
}
