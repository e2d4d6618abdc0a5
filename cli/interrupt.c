/* The one place that catches Ctrl-C and SIGTERM (and, while a freeze runs, SIGHUP):
 * a flag that the waits, transfers and the library's cancel callbacks poll. */
#include <string.h>

#include "interrupt.h"

static volatile sig_atomic_t interrupted;
static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

void cli_catch_interrupt(void)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int cli_interrupted(void)
{
	return interrupted;
}

int cli_cancel_cb(void *ud)
{
	(void)ud;
	return interrupted;
}

void cli_interrupt_push(struct cli_sigsave *save)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	interrupted = 0;
	sigaction(SIGINT, &sa, &save->intr);
	sigaction(SIGTERM, &sa, &save->term);
	sigaction(SIGHUP, &sa, &save->hup);
}

void cli_interrupt_pop(const struct cli_sigsave *save)
{
	sigaction(SIGINT, &save->intr, NULL);
	sigaction(SIGTERM, &save->term, NULL);
	sigaction(SIGHUP, &save->hup, NULL);
}
