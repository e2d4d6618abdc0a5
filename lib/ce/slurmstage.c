/* The slurm+ssh backend's staging of storage URLs, node side: the lines of a
 * job script that fetch its inputs from storage before its command and put
 * its outputs there after it, on the compute node, with the user's proxy the
 * submit put into the job's directory (0600 over sftp, never in argv; removed
 * when the staging is done). root:// with xrdcp; davs:// and https:// with
 * curl (the proxy as client certificate, X509_CERT_DIR's CAs, else
 * /etc/grid-security/certificates). A transfer that fails ends the job with
 * one printable line in GG_SLURM_STAGE_ERR: what, where, the tool's last
 * word; status shows it (sacct.c). */
#include "ce/slurmstage.h"

#include <stdlib.h>
#include <string.h>

void gg_slurm_sq(FILE *f, const char *v)
{
	fputc('\'', f);
	for (; *v; v++) {
		if (*v == '\'')
			fputs("'\\''", f);
		else
			fputc(*v, f);
	}
	fputc('\'', f);
}

int gg_slurm_stage_named(const struct gg_jobdesc *jd)
{
	for (int i = 0; i < jd->ninputs; i++)
		if (jd->inputs[i].source && jd->inputs[i].source[0])
			return 1;
	return gg_slurm_stage_outputs(jd);
}

int gg_slurm_stage_outputs(const struct gg_jobdesc *jd)
{
	for (int i = 0; i < jd->noutputs; i++)
		if (jd->output_urls[i])
			return 1;
	return 0;
}

int gg_slurm_stage_check(const struct gg_jobdesc *jd, struct gg_err *err)
{
	struct gg_data_url u;
	for (int i = 0; i < jd->ninputs; i++)
		if (jd->inputs[i].source && jd->inputs[i].source[0] &&
		    gg_data_url_parse(jd->inputs[i].source, &u, err) < 0)
			return gg_err_prefix(err, "input '%s'", jd->inputs[i].name);
	for (int i = 0; i < jd->noutputs; i++)
		if (jd->output_urls[i] && gg_data_url_parse(jd->output_urls[i], &u, err) < 0)
			return gg_err_prefix(err, "output '%s'", jd->outputs[i]);
	return 0;
}

/* gg_fail LINE: the staging failed: the proxy goes, LINE (printable, one
 * line) is the job's failure. gg_copy WHAT TOOL ARGS...: a transfer, its
 * output kept aside; a tool the node lacks or a transfer that fails is
 * gg_fail with what it said last. */
static const char prologue[] =
	"X509_USER_PROXY=\"$PWD/" GG_SLURM_PROXY "\"; export X509_USER_PROXY\n"
	": \"${X509_CERT_DIR:=/etc/grid-security/certificates}\"; export X509_CERT_DIR\n"
	"gg_fail() { rm -f " GG_SLURM_PROXY " " GG_SLURM_STAGE_LOG "; printf '%s\\n' \"$1\" | "
	"LC_ALL=C tr -c '[:print:]\\n' '?' | head -n 1 | cut -c 1-300 >" GG_SLURM_STAGE_ERR
	"; exit 1; }\n"
	"gg_copy() { w=$1; shift; command -v \"$1\" >/dev/null 2>&1 || gg_fail \"$w: $1 is not "
	"on the node: ask the site to install it\"; \"$@\" </dev/null >" GG_SLURM_STAGE_LOG
	" 2>&1 || gg_fail \"$w: $(LC_ALL=C tr -c '[:print:]\\n' ' ' <" GG_SLURM_STAGE_LOG
	" | grep '[^ ]' | tail -n 1)\"; rm -f " GG_SLURM_STAGE_LOG "; }\n";

/* One transfer: name (in the job's directory) from url, or to it (out). */
static void copy_line(FILE *f, const char *name, const char *url, int out)
{
	struct gg_data_url u;
	char *label = gg_strdup_printf("%s of %s %s %s", out ? "stage-out" : "stage-in", name,
				       out ? "to" : "from", url);
	char *local = gg_strdup_printf("./%s", name);
	char *https = gg_data_http_url(url);
	int root = gg_data_url_parse(url, &u, NULL) == 0 && u.scheme == GG_URL_ROOT;
	fputs("gg_copy ", f);
	gg_slurm_sq(f, label ? label : "a transfer");
	if (root)
		fputs(" xrdcp -s -f ", f);
	else
		fputs(" curl -fsS --capath \"$X509_CERT_DIR\" --cert \"$X509_USER_PROXY\" --key "
		      "\"$X509_USER_PROXY\" ",
		      f);
	const char *remote = root || !https ? url : https;
	if (!root)
		fputs(out ? "-T " : "-o ", f);
	gg_slurm_sq(f, out || !root ? (local ? local : name) : remote);
	fputc(' ', f);
	gg_slurm_sq(f, out || !root ? remote : (local ? local : name));
	fputc('\n', f);
	free(label);
	free(local);
	free(https);
}

void gg_slurm_stage_in(FILE *f, const struct gg_jobdesc *jd)
{
	if (!gg_slurm_stage_named(jd))
		return;
	fputs(prologue, f);
	for (int i = 0; i < jd->ninputs; i++)
		if (jd->inputs[i].source && jd->inputs[i].source[0])
			copy_line(f, jd->inputs[i].name, jd->inputs[i].source, 0);
}

void gg_slurm_stage_out(FILE *f, const struct gg_jobdesc *jd)
{
	if (!gg_slurm_stage_named(jd))
		return;
	fputs("if [ \"$gg_rc\" = 0 ]; then\n", f);
	for (int i = 0; i < jd->noutputs; i++)
		if (jd->output_urls[i])
			copy_line(f, jd->outputs[i], jd->output_urls[i], 1);
	fputs("fi\nrm -f " GG_SLURM_PROXY "\n", f);
}

/* The outputs' script the login node runs in the job's directory once the
 * job ended well: the puts, the proxy removed, GG_SLURM_STAGED made. */
static char *stage_out_script(const struct gg_jobdesc *jd)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	fputs(prologue, f);
	fputs("gg_rc=0\n", f);
	gg_slurm_stage_out(f, jd);
	fputs(": >" GG_SLURM_STAGED "\n", f);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

int gg_slurm_stage_login(FILE *f, const struct gg_jobdesc *jd)
{
	if (!gg_slurm_stage_named(jd))
		return 0;
	fputs(" && (cd \"$t\" || exit 1\n", f);
	gg_slurm_stage_in(f, jd);
	if (!gg_slurm_stage_outputs(jd))
		fputs("rm -f " GG_SLURM_PROXY "\n", f);
	fputs(")", f);
	if (!gg_slurm_stage_outputs(jd))
		return 0;
	char *out = stage_out_script(jd);
	if (!out)
		return -1;
	fputs(" && printf '%s' ", f);
	gg_slurm_sq(f, out);
	fputs(" >\"$t/" GG_SLURM_STAGE_OUT "\"", f);
	free(out);
	return 0;
}
