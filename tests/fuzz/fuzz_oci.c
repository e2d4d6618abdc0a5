/* OCI image archives (an OCI layout in a tar) and `docker save` archives to
 * freeze: format detection (gg_image_detect, what --format auto does), then
 * gg_image_freeze --format oci: the outer tar index, index.json / manifest.json,
 * manifests, configs, digests, and the layers with whiteouts. */
#include "freeze.h"
#include "image/internal.h"

static char oci_dir[4096];

static void oci_cleanup(void)
{
	rmdir(oci_dir);
}

FUZZ_INIT(oci)
{
	umask(022);
	FUZZ_CHECK(fuzz_mkdir("fuzz-oci", oci_dir) == 0, "scratch directory in %s", fuzz_tmpdir());
	atexit(oci_cleanup);
}

FUZZ_TARGET(oci)
{
	char path[4096];
	if (fuzz_write_file("oci", data, size, path) < 0)
		return 0;
	enum gg_image_format fmt = GG_IMAGE_AUTO;
	struct gg_err err = {0};
	if (gg_image_detect(path, &fmt, &err) == 0)
		FUZZ_CHECK(fmt == GG_IMAGE_TAR || fmt == GG_IMAGE_OCI, "detected %d for a file",
			   fmt);
	freeze_one(path, GG_IMAGE_OCI, oci_dir);
	unlink(path);
	return 0;
}
