/* Unit tests of the libssh2 client in lib/ssh against a real OpenSSH sshd
 * started on loopback for the test (its host key and the client's key made
 * with ssh-keygen at run time): host key checks (pinned, known_hosts, hashed,
 * missing, wrong), authentication, a chain of hops through direct-tcpip
 * channels, exec with output and error output, streaming, the readiness probe
 * that does not log in. Skipped when there is no sshd. */
#include "unit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "node/sshview.h"
#include "ssh/ssh.h"

static char dir[64];
static char hostkey_pub[512], otherkey_pub[512];
static char path_key[128], path_other[128], path_kh[128], path_log[128];
static int port;
static pid_t sshd = -1;

static int run(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int read_line(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int ok = fgets(out, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

/* A free port on loopback: bind to 0 and ask. */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof a;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &l) < 0)
		return -1;
	close(fd);
	return ntohs(a.sin_port);
}

/* Has sshd written its "Server listening" line? (It does so once bound.) */
static int sshd_listening(void)
{
	char line[512];
	FILE *f = fopen(path_log, "r");
	int yes = 0;
	while (f && fgets(line, sizeof line, f))
		yes |= strstr(line, "Server listening") != NULL;
	if (f)
		fclose(f);
	return yes;
}

static int setup(void **state)
{
	(void)state;
	if (access("/usr/sbin/sshd", X_OK) < 0)
		return 0; /* the tests skip */
	strcpy(dir, "/tmp/gg-unit-sshc.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	char cmd[2048];
	snprintf(
		cmd, sizeof cmd,
		"cd %s && ssh-keygen -q -t ed25519 -N '' -f host_key && "
		"ssh-keygen -q -t ed25519 -N '' -f id && ssh-keygen -q -t ed25519 -N '' -f other && "
		"cp id.pub authorized_keys",
		dir);
	if (run(cmd) != 0)
		return -1;
	snprintf(path_key, sizeof path_key, "%s/id", dir);
	snprintf(path_other, sizeof path_other, "%s/other", dir);
	snprintf(path_kh, sizeof path_kh, "%s/known_hosts", dir);
	snprintf(path_log, sizeof path_log, "%s/sshd.log", dir);
	char p[256];
	snprintf(p, sizeof p, "%s/host_key.pub", dir);
	if (read_line(p, hostkey_pub, sizeof hostkey_pub) < 0)
		return -1;
	snprintf(p, sizeof p, "%s/other.pub", dir);
	if (read_line(p, otherkey_pub, sizeof otherkey_pub) < 0)
		return -1;
	port = free_port();
	snprintf(p, sizeof p, "%s/sshd_config", dir);
	FILE *f = fopen(p, "w");
	if (!f || port <= 0)
		return -1;
	fprintf(f,
		"Port %d\nListenAddress 127.0.0.1\nHostKey %s/host_key\nAuthorizedKeysFile "
		"%s/authorized_keys\nPidFile %s/sshd.pid\nStrictModes no\nUsePAM no\n"
		"PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
		"PermitRootLogin prohibit-password\nAllowTcpForwarding yes\nLogLevel INFO\n"
		"Subsystem sftp internal-sftp\n",
		port, dir, dir, dir);
	fclose(f);
	if (geteuid() == 0)
		mkdir("/run/sshd", 0755); /* privilege separation, when run as root */
	sshd = fork();
	if (sshd == 0) {
		int fd = open(path_log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, STDERR_FILENO);
		execl("/usr/sbin/sshd", "/usr/sbin/sshd", "-D", "-e", "-f", p, (char *)NULL);
		_exit(127);
	}
	/* Wait (bounded) until it listens: an outside process, polled. */
	for (int i = 0; i < 1200 && !sshd_listening(); i++) {
		struct timespec t = {0, 25 * 1000000L};
		nanosleep(&t, NULL);
	}
	if (!sshd_listening())
		return -1;
	/* The host's key in a known_hosts file, as ssh-keyscan would write it. */
	f = fopen(path_kh, "w");
	if (!f)
		return -1;
	fprintf(f,
		"# a comment\n@cert-authority *.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJcJ5QRxpucacLuUiCNcTHY0PL5THI9wD7nZOVoJq+3C\n");
	fprintf(f, "[127.0.0.1]:%d %s\n", port, hostkey_pub);
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (sshd > 0) {
		kill(sshd, SIGTERM);
		waitpid(sshd, NULL, 0);
	}
	if (!dir[0])
		return 0;
	return unit_rmtree(dir);
}

#define NEED_SSHD()             \
	do {                    \
		if (sshd <= 0)  \
			skip(); \
	} while (0)

static struct gg_ssh_hop direct(void)
{
	return (struct gg_ssh_hop){.host = "127.0.0.1",
				   .port = port,
				   .identity = path_key,
				   .pinned_key = hostkey_pub,
				   .name = "test sshd"};
}

static void test_key_matches(void **state)
{
	(void)state;
	/* The blob of a key line is the base64 part decoded. */
	unsigned char blob[128];
	const char *b64 = strchr(otherkey_pub[0] ? otherkey_pub : "x y", ' ');
	if (!otherkey_pub[0])
		skip();
	char tmp[256];
	snprintf(tmp, sizeof tmp, "%s", b64 + 1);
	tmp[strcspn(tmp, " ")] = '\0';
	FILE *p = NULL;
	char cmd[400];
	snprintf(cmd, sizeof cmd, "printf %%s '%s' | base64 -d", tmp);
	p = popen(cmd, "r");
	size_t n = fread(blob, 1, sizeof blob, p);
	pclose(p);
	assert_true(n > 32);
	assert_int_equal(gg_ssh_key_matches(otherkey_pub, blob, n), 1);
	assert_int_equal(gg_ssh_key_matches(hostkey_pub, blob, n), 0);
	assert_int_equal(gg_ssh_key_matches(otherkey_pub, blob, n - 1), 0);
	assert_int_equal(gg_ssh_key_matches("ssh-ed25519 !!!!", blob, n), 0);
	assert_int_equal(gg_ssh_key_matches("nospace", blob, n), 0);
	assert_int_equal(gg_ssh_key_matches(NULL, blob, n), 0);
}

static void test_route(void **state)
{
	(void)state;
	if (!dir[0])
		skip();
	/* the generated config's directories: the test's own */
	setenv("XDG_CONFIG_HOME", dir, 1);
	setenv("XDG_RUNTIME_DIR", dir, 1);
	struct gg_site site = {.name = "s", .njumps = 2, .identity = "/k", .known_hosts = "/kh"};
	site.jumps[0] = "alice@jump1.example:2222";
	site.jumps[1] = "jump2.example";
	struct gg_record r = {.name = "dev"};
	struct gg_ssh_route rt;
	struct gg_err err = {0};
	assert_int_equal(gg_session_route(&site, &r, &rt, &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "not published"));
	r.node = "10.0.0.7";
	r.port = 22001;
	r.user = "bob";
	r.key = "/keys/dev";
	r.host_key = hostkey_pub;
	assert_int_equal(gg_session_route(&site, &r, &rt, &err), 0);
	assert_int_equal(rt.n, 3);
	assert_string_equal(rt.hops[0].host, "jump1.example");
	assert_int_equal(rt.hops[0].port, 2222);
	assert_string_equal(rt.hops[0].user, "alice");
	assert_string_equal(rt.hops[0].identity, "/k");
	assert_string_equal(rt.hops[0].known_hosts, "/kh");
	assert_null(rt.hops[0].pinned_key);
	assert_string_equal(rt.hops[1].host, "jump2.example");
	assert_int_equal(rt.hops[1].port, 0); /* the default, 22 */
	assert_null(rt.hops[1].user);
	assert_string_equal(rt.hops[2].host, "10.0.0.7");
	assert_int_equal(rt.hops[2].port, 22001);
	assert_string_equal(rt.hops[2].user, "bob");
	assert_string_equal(rt.hops[2].identity, "/keys/dev");
	assert_string_equal(rt.hops[2].pinned_key, hostkey_pub);
	gg_ssh_route_clear(&rt);
	/* no site: straight to the node */
	assert_int_equal(gg_session_route(NULL, &r, &rt, &err), 0);
	assert_int_equal(rt.n, 1);
	gg_ssh_route_clear(&rt);
	/* lib/ssh itself: a plain target */
	struct gg_ssh_target t = {
		.name = "dev", .node = "10.0.0.8", .port = 22002, .host_key = hostkey_pub};
	assert_int_equal(gg_ssh_session_route(&site, &t, &rt, &err), 0);
	assert_int_equal(rt.n, 3);
	assert_string_equal(rt.hops[2].host, "10.0.0.8");
	assert_int_equal(rt.hops[2].port, 22002);
	assert_null(rt.hops[2].user);
	assert_null(rt.hops[2].identity);
	assert_string_equal(rt.hops[2].pinned_key, hostkey_pub);
	gg_ssh_route_clear(&rt);
	t.host_key = NULL;
	assert_int_equal(gg_ssh_session_route(&site, &t, &rt, &err), GG_EUSAGE);
}

static void test_unreachable(void **state)
{
	(void)state;
	struct gg_ssh_hop h = {.host = "127.0.0.1", .port = free_port(), .pinned_key = "x y"};
	struct gg_ssh_conn *c = NULL;
	struct gg_err err = {0};
	size_t failed = 99;
	assert_int_equal(gg_ssh_connect(&h, 1, 2000, &c, &failed, &err), GG_ENET);
	assert_null(c);
	assert_int_equal(failed, 0);
	assert_non_null(strstr(err.msg, "cannot connect"));
	assert_non_null(strstr(err.msg, "refused"));
	struct gg_ssh_hop bad = {.host = "no-such-host.invalid", .port = 22};
	assert_int_equal(gg_ssh_connect(&bad, 1, 2000, &c, NULL, &err), GG_ENET);
	assert_non_null(strstr(err.msg, "cannot resolve"));
	assert_int_equal(gg_ssh_connect(&bad, 0, 2000, &c, NULL, &err), GG_EUSAGE);
}

static void test_exec(void **state)
{
	(void)state;
	NEED_SSHD();
	struct gg_ssh_hop h = direct();
	struct gg_ssh_conn *c = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_ssh_connect(&h, 1, 10000, &c, NULL, &err), 0);
	char *out = NULL, *said = NULL;
	size_t len = 0;
	int st = -1;
	assert_int_equal(gg_ssh_exec_capture(c, "echo hello; echo oops >&2; exit 3", 1 << 20, &out,
					     &len, &st, &said, &err),
			 0);
	assert_string_equal(out, "hello\n");
	assert_int_equal(len, 6);
	assert_int_equal(st, 3);
	assert_non_null(said);
	assert_string_equal(said, "oops\n");
	free(out);
	free(said);
	/* a second command on the same connection; nothing on stderr */
	assert_int_equal(gg_ssh_exec_capture(c, "printf abc", 100, &out, &len, &st, &said, &err),
			 0);
	assert_string_equal(out, "abc");
	assert_int_equal(st, 0);
	assert_null(said);
	free(out);
	/* more output than allowed: refused, nothing returned */
	assert_int_equal(
		gg_ssh_exec_capture(c, "head -c 10000 /dev/zero", 100, &out, &len, &st, NULL, &err),
		GG_EPROTO);
	assert_null(out);
	/* lots of error output does not block the output (both are read) */
	assert_int_equal(gg_ssh_exec_capture(c,
					     "yes x | head -c 300000 >&2; echo done; "
					     "echo last-words >&2",
					     100, &out, &len, &st, &said, &err),
			 0);
	assert_string_equal(out, "done\n");
	assert_true(strlen(said) < 4096 && strstr(said, "last-words"));
	free(out);
	free(said);
	/* a signal ends it: 128 + its number */
	assert_int_equal(gg_ssh_exec_capture(c, "kill -TERM $$", 100, &out, &len, &st, NULL, &err),
			 0);
	assert_int_equal(st, 128 + SIGTERM);
	free(out);
	gg_ssh_disconnect(c);
	gg_ssh_disconnect(NULL);
}

static int sink_mem(void *ud, const void *buf, size_t len)
{
	char **m = ud;
	size_t have = *m ? strlen(*m) : 0;
	char *t = realloc(*m, have + len + 1);
	if (!t)
		return -1;
	memcpy(t + have, buf, len);
	t[have + len] = '\0';
	*m = t;
	return 0;
}

/* sftp on the last hop (lib/ssh/sftp.c): a file put from a descriptor and read
 * back whole, a missing one, one over the bound, a directory that is not there. */
static void test_sftp(void **state)
{
	(void)state;
	NEED_SSHD();
	struct gg_ssh_hop h = direct();
	struct gg_ssh_conn *c = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_ssh_connect(&h, 1, 10000, &c, NULL, &err), 0);
	char src[128], dst[128], *back = NULL;
	snprintf(src, sizeof src, "%s/sftp-src", dir);
	snprintf(dst, sizeof dst, "%s/sftp-dst", dir);
	FILE *f = fopen(src, "w");
	assert_non_null(f);
	for (int i = 0; i < 20000; i++)
		fprintf(f, "line %d\n", i);
	fclose(f);
	int fd = open(src, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(gg_ssh_sftp_put(c, fd, dst, NULL, NULL, &err), 0);
	close(fd);
	assert_int_equal(gg_ssh_sftp_get(c, dst, 0, sink_mem, &back, &err), 0);
	char *want = NULL;
	size_t wlen = 0;
	assert_int_equal(gg_file_read(src, 1 << 22, &want, &wlen, &err), 0);
	assert_non_null(back);
	assert_int_equal(strlen(back), wlen);
	assert_memory_equal(back, want, wlen);
	free(back);
	free(want);
	back = NULL;
	assert_int_equal(gg_ssh_sftp_get(c, dst, 1000, sink_mem, &back, &err), GG_EPROTO);
	free(back);
	back = NULL;
	char missing[160];
	snprintf(missing, sizeof missing, "%s/no-such-file", dir);
	assert_int_equal(gg_ssh_sftp_get(c, missing, 0, sink_mem, &back, &err), GG_ENOTFOUND);
	snprintf(missing, sizeof missing, "%s/no-such-dir/f", dir);
	fd = open(src, O_RDONLY);
	assert_int_equal(gg_ssh_sftp_put(c, fd, missing, NULL, NULL, &err), GG_ENOTFOUND);
	close(fd);
	/* the connection still runs commands after sftp */
	char *out = NULL;
	size_t len = 0;
	int st = -1;
	assert_int_equal(gg_ssh_exec_capture(c, "printf ok", 100, &out, &len, &st, NULL, &err), 0);
	assert_string_equal(out, "ok");
	free(out);
	free(back);
	gg_ssh_disconnect(c);
}

/* One sftp session kept for several files: a directory made (not twice, not
 * under a missing parent), files put into it and read back, a command run on
 * the connection between them. */
static void test_sftp_session(void **state)
{
	(void)state;
	NEED_SSHD();
	struct gg_ssh_hop h = direct();
	struct gg_ssh_conn *c = NULL;
	struct gg_ssh_sftp *x = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_ssh_connect(&h, 1, 10000, &c, NULL, &err), 0);
	assert_int_equal(gg_ssh_sftp_start(c, &x, &err), 0);
	char d[128], path[160], src[128], missing[160];
	snprintf(d, sizeof d, "%s/kept", dir);
	snprintf(src, sizeof src, "%s/kept-src", dir);
	snprintf(missing, sizeof missing, "%s/no-such-dir/d", dir);
	assert_int_equal(gg_ssh_sftp_mkdir(x, d, &err), 0);
	struct stat sb;
	assert_int_equal(stat(d, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	assert_int_equal(gg_ssh_sftp_mkdir(x, d, &err), GG_EIO);
	assert_int_equal(gg_ssh_sftp_mkdir(x, missing, &err), GG_ENOTFOUND);
	FILE *f = fopen(src, "w");
	assert_non_null(f);
	fputs("kept session\n", f);
	fclose(f);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/f%d", d, i);
		int fd = open(src, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(gg_ssh_sftp_put_on(x, fd, path, NULL, NULL, &err), 0);
		close(fd);
		char *out = NULL;
		size_t len = 0;
		int st = -1;
		assert_int_equal(
			gg_ssh_exec_capture(c, "printf ok", 100, &out, &len, &st, NULL, &err), 0);
		assert_string_equal(out, "ok");
		free(out);
		char *back = NULL;
		assert_int_equal(gg_ssh_sftp_get_on(x, path, 0, sink_mem, &back, &err), 0);
		assert_string_equal(back, "kept session\n");
		free(back);
	}
	gg_ssh_sftp_end(x);
	gg_ssh_disconnect(c);
}

/* Three hops, each a connection through the one before (the same sshd each
 * time: it forwards to itself), with 8 MiB through all of them. */
static void test_hops(void **state)
{
	(void)state;
	NEED_SSHD();
	struct gg_ssh_hop h[3];
	h[0] = (struct gg_ssh_hop){.host = "127.0.0.1",
				   .port = port,
				   .identity = path_key,
				   .known_hosts = path_kh,
				   .name = "jump host 1"};
	h[1] = h[0];
	h[1].name = "jump host 2";
	h[2] = direct();
	struct gg_ssh_conn *c = NULL;
	struct gg_err err = {0};
	size_t failed = 99;
	assert_int_equal(gg_ssh_connect(h, 3, 10000, &c, &failed, &err), 0);
	assert_int_equal(failed, 3);
	char *out = NULL;
	size_t len = 0;
	int st = -1;
	assert_int_equal(gg_ssh_exec_capture(c,
					     "head -c 8388608 /dev/urandom | od -An -v -tx1 | "
					     "head -c 8388608",
					     16 << 20, &out, &len, &st, NULL, &err),
			 0);
	assert_int_equal(len, 8388608);
	assert_int_equal(st, 0);
	free(out);
	/* the sshd saw the hops as connections from loopback */
	assert_int_equal(
		gg_ssh_exec_capture(c, "echo $SSH_CONNECTION", 200, &out, &len, &st, NULL, &err),
		0);
	assert_non_null(strstr(out, "127.0.0.1"));
	free(out);
	gg_ssh_disconnect(c);
}

static void test_host_keys(void **state)
{
	(void)state;
	NEED_SSHD();
	struct gg_ssh_conn *c = NULL;
	struct gg_err err = {0};
	size_t failed = 99;
	/* the last hop pinned to another key: refused, and the hop is named */
	struct gg_ssh_hop h[2];
	h[0] = (struct gg_ssh_hop){.host = "127.0.0.1",
				   .port = port,
				   .identity = path_key,
				   .known_hosts = path_kh,
				   .name = "jump host 1"};
	h[1] = direct();
	h[1].pinned_key = otherkey_pub;
	assert_int_equal(gg_ssh_connect(h, 2, 10000, &c, &failed, &err), GG_EHOSTKEY);
	assert_null(c);
	assert_int_equal(failed, 1);
	assert_non_null(strstr(err.msg, "test sshd"));
	assert_non_null(strstr(err.msg, "man-in-the-middle"));
	/* a known_hosts that names another key for the host */
	char p[160];
	snprintf(p, sizeof p, "%s/kh-wrong", dir);
	FILE *f = fopen(p, "w");
	fprintf(f, "[127.0.0.1]:%d %s\n", port, otherkey_pub);
	fclose(f);
	h[0].known_hosts = p;
	assert_int_equal(gg_ssh_connect(h, 1, 10000, &c, &failed, &err), GG_EHOSTKEY);
	assert_int_equal(failed, 0);
	assert_non_null(strstr(err.msg, "does not match"));
	/* one without the host: no trust on first use */
	f = fopen(p, "w");
	fprintf(f, "[127.0.0.1]:%d %s\n", port + 1, hostkey_pub);
	fclose(f);
	assert_int_equal(gg_ssh_connect(h, 1, 10000, &c, &failed, &err), GG_ECRED);
	assert_non_null(strstr(err.msg, "is not in"));
	/* hashed entries (ssh-keygen -H) are found */
	char cmd[400];
	snprintf(cmd, sizeof cmd, "cp %s %s && ssh-keygen -q -H -f %s >/dev/null 2>&1", path_kh, p,
		 p);
	assert_int_equal(run(cmd), 0);
	f = fopen(p, "r");
	char line[1024];
	int hashed = 0;
	while (fgets(line, sizeof line, f))
		hashed |= strncmp(line, "|1|", 3) == 0;
	fclose(f);
	assert_true(hashed);
	assert_int_equal(gg_ssh_connect(h, 1, 10000, &c, &failed, &err), 0);
	gg_ssh_disconnect(c);
	/* no file at all */
	snprintf(p, sizeof p, "%s/none", dir);
	assert_int_equal(gg_ssh_connect(h, 1, 10000, &c, &failed, &err), GG_ECRED);
	assert_non_null(strstr(err.msg, "no known_hosts"));
}

/* known_hosts markers and long lines: a @revoked key is refused even when a
 * plain line names it; @cert-authority alone says host certificates are not
 * supported; lines of any length are read whole. */
static void test_known_hosts_lines(void **state)
{
	(void)state;
	NEED_SSHD();
	struct gg_ssh_conn *c = NULL;
	struct gg_err err = {0};
	size_t failed;
	char p[160];
	snprintf(p, sizeof p, "%s/kh-marks", dir);
	struct gg_ssh_hop h = {.host = "127.0.0.1",
			       .port = port,
			       .identity = path_key,
			       .known_hosts = p,
			       .name = "jump host 1"};
	FILE *f = fopen(p, "w");
	fprintf(f, "[127.0.0.1]:%d %s\n@revoked * %s\n", port, hostkey_pub, hostkey_pub);
	fclose(f);
	assert_int_equal(gg_ssh_connect(&h, 1, 10000, &c, &failed, &err), GG_EHOSTKEY);
	assert_null(c);
	assert_non_null(strstr(err.msg, "@revoked"));
	/* another key revoked: this one is still accepted */
	f = fopen(p, "w");
	fprintf(f, "@revoked * %s\n[127.0.0.1]:%d %s\n", otherkey_pub, port, hostkey_pub);
	fclose(f);
	assert_int_equal(gg_ssh_connect(&h, 1, 10000, &c, &failed, &err), 0);
	gg_ssh_disconnect(c);
	c = NULL;
	/* only a certificate authority for the host */
	f = fopen(p, "w");
	fprintf(f, "@cert-authority [127.0.0.1]:%d %s\n", port, otherkey_pub);
	fclose(f);
	assert_int_equal(gg_ssh_connect(&h, 1, 10000, &c, &failed, &err), GG_ECRED);
	assert_non_null(strstr(err.msg, "host certificates are not supported"));
	/* a comment over 16 KiB whose tail looks like an entry: one line, a
	 * comment, so the host is not known (a 16 KiB reader took the tail for an
	 * entry of its own) */
	f = fopen(p, "w");
	fputc('#', f);
	for (int i = 1; i < 16383; i++)
		fputc('x', f);
	fprintf(f, "[127.0.0.1]:%d %s\n", port, hostkey_pub);
	fclose(f);
	assert_int_equal(gg_ssh_connect(&h, 1, 10000, &c, &failed, &err), GG_ECRED);
	assert_non_null(strstr(err.msg, "is not in"));
	/* an entry over 16 KiB (a long host list) is read whole */
	f = fopen(p, "w");
	for (int i = 0; i < 2000; i++)
		fprintf(f, "host%d.example,", i);
	fprintf(f, "[127.0.0.1]:%d %s\n", port, hostkey_pub);
	fclose(f);
	assert_int_equal(gg_ssh_connect(&h, 1, 10000, &c, &failed, &err), 0);
	gg_ssh_disconnect(c);
}

static void test_auth(void **state)
{
	(void)state;
	NEED_SSHD();
	struct gg_ssh_conn *c = NULL;
	struct gg_err err = {0};
	struct gg_ssh_hop h = direct();
	h.identity = path_other; /* not in authorized_keys */
	assert_int_equal(gg_ssh_connect(&h, 1, 10000, &c, NULL, &err), GG_ECRED);
	assert_non_null(strstr(err.msg, "refused the key"));
	/* a key others can read is not used */
	chmod(path_other, 0644);
	assert_int_equal(gg_ssh_connect(&h, 1, 10000, &c, NULL, &err), GG_ECRED);
	assert_non_null(strstr(err.msg, "chmod"));
	chmod(path_other, 0600);
	h.identity = "/nonexistent/key";
	assert_int_equal(gg_ssh_connect(&h, 1, 10000, &c, NULL, &err), GG_ECRED);
	assert_non_null(strstr(err.msg, "/nonexistent/key"));
	/* a probe does not log in: no "Accepted publickey" for it, and nothing
	 * can be run on such a connection */
	h = direct();
	h.no_login = 1;
	char before[64 * 1024] = "";
	FILE *f = fopen(path_log, "r");
	size_t nb = fread(before, 1, sizeof before - 1, f);
	fclose(f);
	assert_int_equal(gg_ssh_connect(&h, 1, 10000, &c, NULL, &err), 0);
	char *out = NULL;
	size_t len;
	int st;
	assert_int_equal(gg_ssh_exec_capture(c, "true", 10, &out, &len, &st, NULL, &err),
			 GG_EUSAGE);
	gg_ssh_disconnect(c);
	int accepted_before = 0, accepted_after = 0;
	for (char *s = before; (s = strstr(s, "Accepted publickey")); s++)
		accepted_before++;
	/* sshd writes its log after the client went: read until the close is logged */
	char after[64 * 1024];
	size_t na = 0;
	for (int i = 0; i < 1200; i++) {
		f = fopen(path_log, "r");
		na = fread(after, 1, sizeof after - 1, f);
		fclose(f);
		after[na] = '\0';
		if (na > nb && strstr(after + nb, "preauth"))
			break;
		struct timespec t = {0, 25 * 1000000L};
		nanosleep(&t, NULL);
	}
	for (char *s = after; (s = strstr(s, "Accepted publickey")); s++)
		accepted_after++;
	assert_int_equal(accepted_after, accepted_before);
	assert_non_null(strstr(after + nb, "preauth"));
}

static void test_stream(void **state)
{
	(void)state;
	NEED_SSHD();
	struct gg_ssh_hop h = direct();
	struct gg_ssh_conn *c = NULL;
	struct gg_err err = {0};
	assert_int_equal(gg_ssh_connect(&h, 1, 10000, &c, NULL, &err), 0);
	struct gg_ssh_stream *x = NULL;
	int fd = -1;
	assert_int_equal(gg_ssh_stream_start(c, "head -c 3000000 /dev/zero; echo bye >&2; exit 4",
					     &fd, &x, &err),
			 0);
	char buf[65536];
	size_t total = 0;
	ssize_t r;
	while ((r = read(fd, buf, sizeof buf)) > 0)
		total += (size_t)r;
	close(fd);
	int st = -1;
	char *said = NULL;
	assert_int_equal(gg_ssh_stream_finish(x, 0, &st, &said, &err), 0);
	assert_int_equal(total, 3000000);
	assert_int_equal(st, 4);
	assert_string_equal(said, "bye\n");
	free(said);
	/* the reader gives up early: the writer ends, nothing hangs */
	assert_int_equal(gg_ssh_stream_start(c, "cat /dev/zero", &fd, &x, &err), 0);
	assert_true(read(fd, buf, sizeof buf) > 0);
	close(fd);
	assert_int_not_equal(gg_ssh_stream_finish(x, 1, &st, NULL, &err), 0);
	gg_ssh_disconnect(c);
}

/* request --image node:/PATH checked on the site's login host (its last jump
 * host, here the test's sshd) where the profile says image-check login: a
 * missing path is a usage error naming it and the login host; one that is
 * there passes; a profile without the setting, or another kind of image, is
 * not checked (no connection made: the jump host below does not exist). */
static void test_image_node_check(void **state)
{
	(void)state;
	NEED_SSHD();
	char jump[64], img[128], image[160];
	snprintf(jump, sizeof jump, "127.0.0.1:%d", port);
	snprintf(img, sizeof img, "%s/it's.sif", dir);
	FILE *f = fopen(img, "w");
	assert_non_null(f);
	fclose(f);
	struct gg_site site = {.name = "tb",
			       .njumps = 1,
			       .identity = path_key,
			       .known_hosts = path_kh,
			       .image_check = "login"};
	site.jumps[0] = jump;
	struct gg_err err = {0};
	assert_int_equal(gg_image_node_check(NULL, &site, "node:/no/such.tar", &err), GG_EUSAGE);
	char want[400];
	snprintf(want, sizeof want,
		 "image 'node:/no/such.tar': no such file on site tb's nodes (looked on its "
		 "login host %s): check the path, or give an image from here",
		 jump);
	assert_string_equal(err.msg, want);
	snprintf(image, sizeof image, "node:%s", img); /* a quote in the path */
	assert_int_equal(gg_image_node_check(NULL, &site, image, &err), 0);
	site.jumps[0] = "nobody@jump.invalid";
	assert_int_equal(gg_image_node_check(NULL, &site, "/no/such.tar", &err), 0);
	site.image_check = "none";
	assert_int_equal(gg_image_node_check(NULL, &site, "node:/no/such.tar", &err), 0);
	site.image_check = NULL;
	assert_int_equal(gg_image_node_check(NULL, &site, "node:/no/such.tar", &err), 0);
	assert_int_equal(gg_image_node_check(NULL, NULL, "node:/no/such.tar", &err), 0);
	site.image_check = "login";
	site.njumps = 0;
	assert_int_equal(gg_image_node_check(NULL, &site, "node:/no/such.tar", &err), GG_EUSAGE);
	assert_non_null(strstr(err.msg, "image-check login needs its jump hosts"));
}

/* A hop that asks for a second factor is reached through an OpenSSH master (here
 * one opened with the key alone): the next hop rides on it (ssh -W); with no
 * master up, the connection fails at once naming the command to run. */
static void test_master(void **state)
{
	(void)state;
	NEED_SSHD();
	char ctl[128], cmd[1024];
	snprintf(ctl, sizeof ctl, "%s/hop.s.1", dir);
	snprintf(cmd, sizeof cmd,
		 "ssh -F none -o BatchMode=yes -o UserKnownHostsFile=%s -o "
		 "StrictHostKeyChecking=yes -i %s -o IdentitiesOnly=yes -p %d -M -S %s -N -f "
		 "-o ControlPersist=60 127.0.0.1 2>/dev/null",
		 path_kh, path_key, port, ctl);
	assert_int_equal(run(cmd), 0);
	assert_true(gg_ssh_master_alive(ctl));
	struct gg_ssh_hop h[2];
	h[0] = (struct gg_ssh_hop){.host = "127.0.0.1",
				   .port = port,
				   .name = "jump host 1",
				   .control = ctl,
				   .login = "gridgpu login s"};
	h[1] = direct();
	struct gg_ssh_conn *c = NULL;
	struct gg_err err = {0};
	size_t failed = 99;
	assert_int_equal(gg_ssh_connect(h, 2, 10000, &c, &failed, &err), 0);
	assert_int_equal(failed, 2);
	char *out = NULL;
	size_t len = 0;
	int st = -1;
	assert_int_equal(gg_ssh_exec_capture(c, "echo through", 200, &out, &len, &st, NULL, &err),
			 0);
	assert_string_equal(out, "through\n");
	free(out);
	gg_ssh_disconnect(c);
	/* the last hop cannot be one: nothing would run libssh2's login */
	c = NULL;
	assert_int_equal(gg_ssh_connect(h, 1, 10000, &c, &failed, &err), GG_EUSAGE);
	assert_null(c);
	/* no master: at once (well before the minute given), one line naming the command */
	snprintf(cmd, sizeof cmd, "ssh -F none -S %s -O exit x 2>/dev/null", ctl);
	assert_int_equal(run(cmd), 0);
	for (int i = 0; i < 1500 && gg_ssh_master_alive(ctl); i++) {
		struct timespec t = {0, 20 * 1000000L};
		nanosleep(&t, NULL);
	}
	assert_false(gg_ssh_master_alive(ctl));
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(gg_ssh_connect(h, 2, 60000, &c, &failed, &err), GG_ENET);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 30);
	assert_int_equal(failed, 0);
	assert_non_null(strstr(err.msg, "run 'gridgpu login s'"));
	assert_null(strchr(err.msg, '\n'));
}

/* Bulk streams and short commands by OpenSSH (ostream.c), over one master. */
static void test_openssh(void **state)
{
	(void)state;
	NEED_SSHD();
	char cfg[128], ctl[128];
	snprintf(cfg, sizeof cfg, "%s/ossh_config", dir);
	snprintf(ctl, sizeof ctl, "%s/om", dir);
	FILE *f = fopen(cfg, "w");
	assert_non_null(f);
	fprintf(f,
		"Host t\n  HostName 127.0.0.1\n  Port %d\n  IdentityFile %s\n  IdentitiesOnly "
		"yes\n  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n",
		port, path_key, path_kh);
	fclose(f);
	struct gg_err err = {0};
	assert_int_equal(gg_ssh_omaster_open(cfg, "t", ctl, 60, &err), 0);
	assert_true(gg_ssh_master_alive(ctl));
	char *out = NULL, *errtext = NULL;
	size_t len = 0;
	int st = -1;
	assert_int_equal(gg_ssh_ocapture(cfg, ctl, "t", "echo out; echo said >&2; exit 3", 100,
					 &out, &len, &st, &errtext, &err),
			 0);
	assert_string_equal(out, "out\n");
	assert_int_equal(st, 3);
	assert_non_null(errtext);
	assert_string_equal(errtext, "said\n");
	free(out);
	free(errtext);
	/* more than max: refused */
	assert_int_equal(gg_ssh_ocapture(cfg, ctl, "t", "head -c 100000 /dev/zero", 1000, &out,
					 &len, &st, NULL, &err),
			 GG_EPROTO);
	/* a stream: every byte read, and counted */
	int fd = -1;
	struct gg_ssh_ostream *x = NULL;
	assert_int_equal(
		gg_ssh_ostream_start(cfg, ctl, "t", "head -c 8388608 /dev/zero", &fd, &x, &err), 0);
	char buf[65536];
	size_t total = 0;
	for (ssize_t r; (r = read(fd, buf, sizeof buf)) > 0;)
		total += (size_t)r;
	close(fd);
	assert_int_equal(total, 8388608);
	assert_int_equal(gg_ssh_ostream_bytes(x), 8388608);
	assert_int_equal(gg_ssh_ostream_finish(x, 0, &st, NULL, &err), 0);
	assert_int_equal(st, 0);
	gg_ssh_omaster_close("t", ctl);
	assert_false(gg_ssh_master_alive(ctl));
	/* the persist time given is the master's: left idle, it ends by itself (it once
	 * stayed for good: ControlPersist=yes) */
	assert_int_equal(gg_ssh_omaster_open(cfg, "t", ctl, 1, &err), 0);
	int alive = 1;
	for (int i = 0; i < 300 && (alive = gg_ssh_master_alive(ctl)); i++)
		nanosleep(&(struct timespec){0, 100000000}, NULL);
	assert_false(alive);
	/* ssh's own failure: GG_ENET with its last line */
	assert_int_equal(gg_ssh_ocapture(cfg, NULL, "no-such-host.invalid", "true", 100, &out, &len,
					 &st, NULL, &err),
			 GG_ENET);
	assert_non_null(strstr(err.msg, "ssh failed: "));
}

/* The profile's second_factor hops, their sockets and the config's lines. */
static void test_master_config(void **state)
{
	(void)state;
	if (!dir[0])
		skip();
	/* the generated config's directories: the test's own */
	setenv("XDG_CONFIG_HOME", dir, 1);
	setenv("XDG_RUNTIME_DIR", dir, 1);
	struct gg_site site = {.name = "s", .njumps = 2, .jumps = {"u@a.example", "u@b.example"}};
	site.second_factor[0] = "2";
	site.nsecond_factor = 1;
	assert_false(gg_site_second_factor(&site, 0));
	assert_true(gg_site_second_factor(&site, 1));
	assert_int_equal(gg_site_control_persist(&site), GG_SSH_PERSIST_DEFAULT);
	site.control_persist = 600;
	assert_int_equal(gg_site_control_persist(&site), 600);
	struct gg_err err = {0};
	char *p = gg_ssh_master_path("/run/x", &site, 1, &err);
	assert_string_equal(p, "/run/x/hop.s.2");
	free(p);
	char longdir[120];
	memset(longdir, 'd', sizeof longdir - 1);
	longdir[0] = '/';
	longdir[sizeof longdir - 1] = '\0';
	assert_null(gg_ssh_master_path(longdir, &site, 1, &err));
	assert_int_equal(err.code, GG_EUSAGE);
	assert_false(gg_ssh_master_alive("/no/such/socket"));
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(gg_ssh_format_hops(f, &site, NULL, &err), 0);
	fclose(f);
	/* hop 2 only: a ControlPath and no master of its own */
	char *h2 = strstr(buf, "Host gridgpu-hop.s.2");
	assert_non_null(h2);
	char *cp = strstr(buf, "ControlPath");
	assert_non_null(cp);
	assert_true(cp > h2);
	assert_non_null(strstr(cp, "/hop.s.2\""));
	assert_non_null(strstr(h2, "ControlMaster no"));
	free(buf);
}

/* The last part of a command's error output is what is kept. */
static void test_keep_tail(void **state)
{
	(void)state;
	char buf[8];
	size_t len = 0;
	gg_ssh_keep_tail(buf, sizeof buf, &len, "abc", 3);
	gg_ssh_keep_tail(buf, sizeof buf, &len, "defg", 4);
	assert_int_equal(len, 7);
	assert_memory_equal(buf, "abcdefg", 7);
	gg_ssh_keep_tail(buf, sizeof buf, &len, "hi", 2);
	assert_int_equal(len, 7);
	assert_memory_equal(buf, "cdefghi", 7);
	gg_ssh_keep_tail(buf, sizeof buf, &len, "0123456789", 10);
	assert_int_equal(len, 7);
	assert_memory_equal(buf, "3456789", 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_matches),
		cmocka_unit_test(test_route),
		cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_exec),
		cmocka_unit_test(test_hops),
		cmocka_unit_test(test_host_keys),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_sftp),
		cmocka_unit_test(test_sftp_session),
		cmocka_unit_test(test_known_hosts_lines),
		cmocka_unit_test(test_image_node_check),
		cmocka_unit_test(test_master),
		cmocka_unit_test(test_master_config),
		cmocka_unit_test(test_openssh),
		cmocka_unit_test(test_keep_tail),
	};
	return cmocka_run_group_tests_name("ssh client", tests, setup, teardown);
}
