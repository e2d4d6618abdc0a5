/* The options request and submit share (resopt.h). */
#include <string.h>

#include "resopt.h"

int cli_res_opt(struct gg_cli *cli, int c, struct gg_jd_resources *res, int *token)
{
	const char *v = cli->optarg;
	int rc;
	switch (c) {
	case O_RES_GPUS:
		/* "can use a GPU": matched as a CPU job, given a GPU where one is free */
		if (v && !strcmp(v, "0-1"))
			return cli->gpu_optional = 1, res->gpus = 0, 0;
		cli->gpu_optional = 0;
		return cli_opt_int(cli, 0, 64, &res->gpus) ? EXIT_USAGE : 0;
	case O_RES_MIG: return cli_opt_mig(cli, &res->mig) ? EXIT_USAGE : 0;
	case O_RES_CPUS: return cli_opt_int(cli, 1, 4096, &res->cpus) ? EXIT_USAGE : 0;
	case O_RES_MEMORY: return cli_opt_size(cli, &res->memory);
	case O_RES_WALLTIME:
		if ((rc = cli_opt_duration(cli, &res->walltime)))
			return rc;
		return res->walltime ? 0 : ui_usage(cli, "--walltime must be more than 0");
	case O_RES_QUEUE: res->queue = v; return 0;
	case O_RES_TOKEN: *token = 1; return 0;
	case O_RES_RIGHT_SIZE: cli->right_size = 1; return 0;
	}
	return 1;
}

int cli_res_check(struct gg_cli *cli, const struct gg_jd_resources *res)
{
	if ((res->gpus || cli->gpu_optional) && res->mig)
		return ui_usage(cli, "--gpus and --mig exclude each other");
	if (cli->gpu_optional && cli->cmd && strcmp(cli->cmd->name, "submit"))
		return ui_usage(cli, "--gpus 0-1: only submit takes it (a session asks --gpus N)");
	return 0;
}
