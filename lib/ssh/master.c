/* Jump hosts that ask for a second factor (a one-time code typed at a prompt):
 * `gridgpu login` opens one OpenSSH master connection per such hop, with the
 * prompt on the user's terminal (gridgpu never sees the code), its control
 * socket in the private control directory; everything else rides on it: the
 * generated ssh config names the socket (ControlPath), and the libssh2 client
 * reaches the hop after it through a stream the master provides
 * (`ssh -S SOCKET -W HOST:PORT`, gg_ssh_master_stream). When no master is up, a
 * command fails at once saying to run `gridgpu login SITE`, instead of hanging
 * on a prompt nobody sees. */
#include "ssh/ssh.h"
#include "compat/compat.h"
#include "core/par.h"
#include "core/run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ssh binds "PATH.XXXXXXXXXXXXXXXX" first: 17 more than the socket's path,
 * within sun_path's 108 bytes. */
#define SOCKET_PATH_MAX (107 - 17)

int gg_site_second_factor(const struct gg_site *site, int k)
{
	for (int i = 0; site && i < site->nsecond_factor; i++)
		if (atoi(site->second_factor[i]) == k + 1)
			return 1;
	return 0;
}

int64_t gg_site_control_persist(const struct gg_site *site)
{
	return site && site->control_persist > 0 ? site->control_persist : GG_SSH_PERSIST_DEFAULT;
}

char *gg_ssh_master_path(const char *control_dir, const struct gg_site *site, int k,
			 struct gg_err *err)
{
	char *p = gg_strdup_printf("%s/hop.%s.%d", control_dir, site->name, k + 1);
	if (!p) {
		gg_err_set(err, GG_ENOMEM, "out of memory");
		return NULL;
	}
	if (strlen(p) > SOCKET_PATH_MAX) {
		gg_err_set(err, GG_EUSAGE,
			   "the control socket '%s' is too long for ssh: use a shorter site "
			   "name, or set XDG_RUNTIME_DIR to a short private directory",
			   p);
		free(p);
		return NULL;
	}
	return p;
}

int gg_ssh_master_alive(const char *path)
{
	int fd = gg_unix_connect(path);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

int gg_ssh_master_missing(const char *label, const char *login, struct gg_err *err)
{
	return gg_err_set(err, GG_ENET,
			  "%s asks for a second factor and no login to it is open: run '%s' "
			  "(it asks for the code once)",
			  label, login ? login : "gridgpu login");
}

int gg_ssh_master_stream(const char *control, const char *host, int port, int *fd, pid_t *pid,
			 struct gg_err *err)
{
	*fd = -1;
	*pid = -1;
	int sv[2];
	if (gg_compat_socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return gg_err_sys(err, GG_EIO, errno, "socketpair");
	char target[300];
	snprintf(target, sizeof target, "%s%s%s:%d", strchr(host, ':') ? "[" : "", host,
		 strchr(host, ':') ? "]" : "", port ? port : 22);
	/* No config (-F none) and a host name that resolves nowhere: when the
	 * master is gone after all, ssh cannot fall back to a login of its own. */
	char *argv[] = {"ssh",
			"-F",
			"none",
			"-o",
			"BatchMode=yes",
			"-o",
			"ControlMaster=no",
			"-S",
			(char *)control,
			"-W",
			target,
			"gridgpu-master.invalid",
			NULL};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	gg_run_spawn_attr(&at);
	int e = posix_spawnp(pid, "ssh", &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(sv[1]);
	if (e) {
		close(sv[0]);
		*pid = -1;
		return gg_err_sys(err, GG_EFAIL, e, "running ssh (install openssh-client)");
	}
	*fd = sv[0];
	return 0;
}

void gg_ssh_master_stream_end(int fd, pid_t pid)
{
	if (fd >= 0)
		close(fd);
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* ---- gridgpu login ------------------------------------------------------------------- */

/* The last line of file with text in it, in buf. */
static void last_line(const char *file, char *buf, size_t len)
{
	buf[0] = '\0';
	FILE *f = fopen(file, "re");
	char line[512];
	while (f && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0])
			snprintf(buf, len, "%s", line);
	}
	if (f)
		fclose(f);
}

/* ssh -O OP for the master at ctl (check, exit). */
static int master_op(const char *ctl, const char *op, pid_t *pid)
{
	char *argv[] = {"ssh",       "-F", "none",     "-S",
			(char *)ctl, "-O", (char *)op, "gridgpu-master.invalid",
			NULL};
	struct gg_run r;
	struct gg_err e = {0};
	if (gg_run_capture(argv, 10000, 1024, &r, &e) < 0)
		return -1;
	int st = r.status;
	const char *at = pid && r.out ? strstr(r.out, "(pid=") : NULL;
	if (pid)
		*pid = at ? (pid_t)atol(at + 5) : 0;
	gg_run_clear(&r);
	return st;
}

/* ssh -f puts the master in a session of its own (daemon(3): fork, the parent
 * exits, the child calls setsid) only after the ssh we waited for has exited:
 * a terminal closed in between (a window closed right after `gridgpu login`,
 * `gridgpu login S && exit`) hangs it up with the terminal's process group.
 * Wait, 2 s at most, until it leads a session of its own. */
static void wait_detached(const char *ctl)
{
	pid_t pid = 0;
	if (master_op(ctl, "check", &pid) != 0 || pid <= 0)
		return;
	int64_t end = gg_mono_ms() + 2000;
	struct timespec tick = {0, 5 * 1000 * 1000};
	while (getsid(pid) != pid && getsid(pid) != -1 && gg_mono_ms() < end)
		nanosleep(&tick, NULL);
}

/* Open the master of hop k: ssh itself asks for the code on the terminal. */
static int open_master(const struct gg_ssh_paths *p, const struct gg_site *site, int k,
		       const char *ctl, struct gg_err *err)
{
	char host[64], persist[48], ctlopt[200], log[200];
	snprintf(host, sizeof host, "gridgpu-hop.%s.%d", site->name, k + 1);
	snprintf(persist, sizeof persist, "ControlPersist=%llds",
		 (long long)gg_site_control_persist(site));
	snprintf(ctlopt, sizeof ctlopt, "ControlPath=%s", ctl);
	snprintf(log, sizeof log, "%s.log", ctl);
	unlink(log);
	char *argv[] = {"ssh",
			"-F",
			p->config,
			"-o",
			"ControlMaster=yes",
			"-o",
			ctlopt,
			"-o",
			persist,
			"-o",
			"BatchMode=no",
			"-o",
			"NumberOfPasswordPrompts=1",
			"-E",
			log,
			"-N",
			"-f",
			host,
			NULL};
	posix_spawnattr_t at;
	posix_spawnattr_init(&at);
	pid_t pid;
	int e = posix_spawnp(&pid, "ssh", NULL, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	if (e)
		return gg_err_sys(err, GG_EFAIL, e, "running ssh (install openssh-client)");
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	char why[400];
	last_line(log, why, sizeof why);
	char *said = gg_str_printable(why, strlen(why));
	int rc = 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && gg_ssh_master_alive(ctl))
		wait_detached(ctl);
	else if (strstr(why, "Permission denied") || strstr(why, "Authentication failed"))
		rc = gg_err_set(
			err, GG_ECRED,
			"jump host %d of site %s refused the login (a wrong or used code?): "
			"run 'gridgpu login %s' again with the next code",
			k + 1, site->name, site->name);
	else if (WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 255 && !why[0]))
		rc = gg_err_set(err, GG_EINTR, "interrupted");
	else
		rc = gg_err_set(err, GG_ENET, "cannot log in to jump host %d of site %s: %s", k + 1,
				site->name, said && *said ? said : "ssh failed");
	free(said);
	return rc;
}

static int missing(const struct gg_site *site, int k, struct gg_err *err)
{
	char label[64], login[160];
	snprintf(label, sizeof label, "jump host %d of site %s", k + 1, site->name);
	snprintf(login, sizeof login, "gridgpu login %s", site->name);
	return gg_ssh_master_missing(label, login, err);
}

int gg_ssh_logins_check(const struct gg_site *site, struct gg_err *err)
{
	if (!site || !site->nsecond_factor)
		return 0;
	struct gg_ssh_paths p;
	int rc = gg_ssh_paths_init(&p, err);
	for (int k = 0; rc == 0 && k < site->njumps; k++) {
		if (!gg_site_second_factor(site, k))
			continue;
		char *ctl = gg_ssh_master_path(p.control, site, k, err);
		if (!ctl)
			rc = err->code;
		else if (!gg_ssh_master_alive(ctl))
			rc = missing(site, k, err);
		free(ctl);
	}
	gg_ssh_paths_clear(&p);
	return rc;
}

int gg_ssh_login(const struct gg_ssh_paths *p, const struct gg_site *site, enum gg_ssh_login_op op,
		 gg_ssh_login_fn said, void *ud, struct gg_err *err)
{
	int any = 0;
	for (int k = 0; k < site->njumps; k++) {
		if (!gg_site_second_factor(site, k))
			continue;
		any = 1;
		char *ctl = gg_ssh_master_path(p->control, site, k, err);
		if (!ctl)
			return err->code;
		int alive = gg_ssh_master_alive(ctl), rc = 0;
		enum gg_ssh_login_state s = alive ? GG_LOGIN_UP : GG_LOGIN_DOWN;
		if (op == GG_LOGIN_OPEN && !alive) {
			if (said)
				said(ud, k, GG_LOGIN_ASKING);
			rc = open_master(p, site, k, ctl, err);
			s = GG_LOGIN_OPENED;
		} else if (op == GG_LOGIN_EXIT && alive) {
			master_op(ctl, "exit", NULL);
			s = gg_ssh_master_alive(ctl) ? GG_LOGIN_UP : GG_LOGIN_CLOSED;
		} else if (op == GG_LOGIN_CHECK && !alive) {
			rc = missing(site, k, err);
		}
		free(ctl);
		if (rc < 0)
			return rc;
		if (said)
			said(ud, k, s);
	}
	if (!any)
		return gg_err_set(err, GG_EUSAGE,
				  "site %s has no jump host that asks for a second factor (gridgpu "
				  "site set %s second-factor N)",
				  site->name, site->name);
	return 0;
}

int gg_ssh_hops_masters(const struct gg_site *site, struct gg_ssh_hop *h, struct gg_ssh_masters *m,
			struct gg_err *err)
{
	if (!site || !site->nsecond_factor)
		return 0;
	struct gg_ssh_paths p;
	int rc = gg_ssh_paths_init(&p, err);
	if (rc < 0)
		return rc;
	snprintf(m->login, sizeof m->login, "gridgpu login %s", site->name);
	for (int k = 0; rc == 0 && k < site->njumps; k++) {
		if (!gg_site_second_factor(site, k))
			continue;
		char *ctl = gg_ssh_master_path(p.control, site, k, err);
		if (!ctl) {
			rc = err->code;
			break;
		}
		snprintf(m->ctl[k], sizeof m->ctl[k], "%s", ctl);
		free(ctl);
		h[k].control = m->ctl[k];
		h[k].login = m->login;
	}
	gg_ssh_paths_clear(&p);
	return rc;
}
