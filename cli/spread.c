/* submit's jobs to their sites: --count N round-robin, each to the first site from
 * its turn that takes it; one name a line (or the --json document) for those sent,
 * one error line for each refused. */
#include <stdlib.h>

#include "cli.h"
#include "ctx.h"
#include "interrupt.h"
#include "gridgpu/session.h"

int cli_submit_spread(struct gg_cli *cli, const struct gg_job_spec *spec,
		      const struct gg_site *const *sites, int nsites, int count, const char *name,
		      int token)
{
	cli_catch_interrupt();
	int exit_code = EXIT_OK, nok = 0;
	json_t *done = json_array();
	for (int i = 0; i < count && !cli_interrupted(); i++) {
		struct gg_err err = {0};
		struct gg_record r;
		int rc = gg_engine_submit_job(cli_engine(cli), spec, sites, nsites, i, name, token,
					      &r, &err);
		if (rc == 0) {
			nok++;
			gg_json_append(done, cli_record_json(&r));
			if (!cli->json)
				ui_out("%s\n", r.name);
			gg_record_clear(&r);
			continue;
		}
		int code = ui_fail(cli, &err, "submit%s",
				   nsites > 1 ? " (no site accepted the job)" : "");
		if (!exit_code)
			exit_code = code;
		if (rc == GG_EINTR)
			break;
	}
	if (cli->json && (nok || !exit_code)) /* else the error is the document */
		ui_json_doc("submit", done);
	else
		json_decref(done);
	if (nok)
		ui_info(cli,
			"'gridgpu jobs --sync' follows them; 'gridgpu get NAME' fetches the outputs");
	return exit_code;
}
