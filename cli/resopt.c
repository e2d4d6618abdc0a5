/* The options request and submit share (resopt.h). */
#include "resopt.h"

int cli_res_opt(struct gg_cli *cli, int c, struct gg_jd_resources *res, int *token)
{
	struct gg_err err = {0};
	const char *v = cli->optarg;
	switch (c) {
	case O_RES_GPUS: return cli_opt_int(cli, 0, 64, &res->gpus) ? EXIT_USAGE : 0;
	case O_RES_MIG: res->mig = v; return 0;
	case O_RES_CPUS: return cli_opt_int(cli, 1, 4096, &res->cpus) ? EXIT_USAGE : 0;
	case O_RES_MEMORY:
		return gg_size_parse(v, &res->memory, &err) < 0 ? ui_fail(cli, &err, "--memory")
								: 0;
	case O_RES_WALLTIME:
		if (gg_duration_parse(v, &res->walltime, &err) < 0)
			return ui_fail(cli, &err, "--walltime");
		return res->walltime ? 0 : ui_usage(cli, "--walltime must be more than 0");
	case O_RES_QUEUE: res->queue = v; return 0;
	case O_RES_TOKEN: *token = 1; return 0;
	}
	return 1;
}

int cli_res_check(struct gg_cli *cli, const struct gg_jd_resources *res)
{
	if (res->gpus && res->mig)
		return ui_usage(cli, "--gpus and --mig exclude each other");
	return 0;
}
