# Homebrew formula for gridgpu (macOS and Linux). Not yet tried on a Mac: the README's
# "Running the client elsewhere" says what the compat layer covers there and what a Mac
# still has to show. Until a release is published, install from a tarball made by
# `make dist`:  brew install --formula ./packaging/homebrew/gridgpu.rb  with url below
# pointing at it (file:///path/to/gridgpu-0.1.0.tar.gz) and its sha256.
class Gridgpu < Formula
  desc "Interactive GPU sessions and batch work on grid sites (ARC CE, Slurm, VOMS)"
  homepage "https://example.org/gridgpu" # the project's public address, once it has one
  url "file:///tmp/gridgpu-0.1.0.tar.gz"
  version "0.1.0"
  sha256 "0000000000000000000000000000000000000000000000000000000000000000"
  license "Apache-2.0"

  depends_on "cmocka" => :build
  depends_on "pkgconf" => :build
  depends_on "curl"
  depends_on "inih"
  depends_on "jansson"
  depends_on "libarchive"
  depends_on "libdeflate"
  depends_on "libssh2"
  depends_on "openssl@3"
  depends_on "squashfs-tools-ng"

  def install
    # the Linux fast paths are found or not by configure; on macOS it takes the
    # POSIX fallbacks of lib/compat/ by itself
    system "./configure", "--prefix=#{prefix}", "--libexecdir=#{libexec}"
    system "make", "all"
    system "make", "unit"
    system "make", "install"
  end

  test do
    assert_match version.to_s, shell_output("#{bin}/gridgpu --version")
    # no NVML on a Mac: gpus says so
    assert_match "NVML", shell_output("#{bin}/gridgpu gpus 2>&1")
  end
end
