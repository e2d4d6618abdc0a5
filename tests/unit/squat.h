/* linkat, interposed for the tests of writers that name an unnamed temp file
 * (gg_file_name_unnamed): while squat > 0, the name about to be given is taken first,
 * by a file of "another program", so the real linkat finds it there. squat_intact()
 * checks that every such file is still there, unchanged, and removes it. Include it
 * in one test program at most once. */
#ifndef GG_TEST_SQUAT_H
#define GG_TEST_SQUAT_H

#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SQUAT_MAX  64
#define SQUAT_TEXT "someone else's"

static int squat;
static char squatted[SQUAT_MAX][600];
static int nsquatted;

int linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags)
{
	if (squat > 0 && newdirfd == AT_FDCWD && nsquatted < SQUAT_MAX) {
		squat--;
		snprintf(squatted[nsquatted++], sizeof squatted[0], "%s", newpath);
		int fd = open(newpath, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd >= 0) {
			if (write(fd, SQUAT_TEXT, strlen(SQUAT_TEXT)) < 0)
				nsquatted = SQUAT_MAX + 1; /* squat_intact fails */
			close(fd);
		}
	}
	return (int)syscall(SYS_linkat, olddirfd, oldpath, newdirfd, newpath, flags);
}

/* 1 where unnamed temp files can be made in dir (else the writers name theirs). */
static int squat_unnamed_works(const char *dir)
{
	int fd = gg_compat_tmpfile(dir, 1);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* The number of squatted files, all intact, now removed; -1 if one was not. */
static int squat_intact(void)
{
	int n = nsquatted, ok = n <= SQUAT_MAX;
	for (int i = 0; ok && i < n; i++) {
		char buf[64] = {0};
		int fd = open(squatted[i], O_RDONLY);
		ok = fd >= 0 && read(fd, buf, sizeof buf - 1) == (ssize_t)strlen(SQUAT_TEXT) &&
		     strcmp(buf, SQUAT_TEXT) == 0;
		if (fd >= 0)
			close(fd);
		unlink(squatted[i]);
	}
	nsquatted = 0;
	squat = 0;
	return ok ? n : -1;
}

#endif
