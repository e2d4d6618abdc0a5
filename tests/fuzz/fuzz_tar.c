/* Tar streams to freeze (docker export, a tar of a sandbox; plain or compressed):
 * gg_image_freeze --format tar, which reads them with libarchive into the tree and
 * streams the data into a squashfs in a SIF. */
#include "freeze.h"

static char tar_dir[4096];

static void tar_cleanup(void)
{
	rmdir(tar_dir);
}

FUZZ_INIT(tar)
{
	umask(022);
	FUZZ_CHECK(fuzz_mkdir("fuzz-tar", tar_dir) == 0, "scratch directory in %s", fuzz_tmpdir());
	atexit(tar_cleanup);
}

FUZZ_TARGET(tar)
{
	char path[4096];
	if (fuzz_write_file("tar", data, size, path) < 0)
		return 0;
	freeze_one(path, GG_IMAGE_TAR, tar_dir);
	unlink(path);
	return 0;
}
