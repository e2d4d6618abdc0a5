/* Ctrl-C, SIGTERM (and for freeze SIGHUP): one flag that the waits, transfers and the
 * library's cancel callbacks poll. */
#ifndef GG_CLI_INTERRUPT_H
#define GG_CLI_INTERRUPT_H

#include <signal.h>

/* Ctrl-C and SIGTERM set a flag the waits and transfers poll. */
void cli_catch_interrupt(void);
int cli_interrupted(void);
int cli_cancel_cb(void *ud);

/* The handlers in place before cli_interrupt_push. */
struct cli_sigsave {
	struct sigaction intr, term, hup;
};
/* For a bounded stretch (a freeze): clear the flag and let SIGINT, SIGTERM and SIGHUP
 * set it, without SA_RESTART, so that blocking reads return EINTR; pop puts the
 * handlers saved in *save back. */
void cli_interrupt_push(struct cli_sigsave *save);
void cli_interrupt_pop(const struct cli_sigsave *save);

#endif
