package cli

import (
	"os"
	"os/exec"
	"testing"
)

// TestDNGLibRaw: python3-tifffile writes camera DNGs (the four Bayer
// patterns, both byte orders, strips, tiles, a SubIFD, an ActiveArea);
// depthspace packs each with --block-order cfa and converts it whole;
// the whole mosaic must be LibRaw's unprocessed_raw and the four planes
// LibRaw's 4channels planes (testdata/interop/dng_peer.py). Under CI the
// LibRaw tools must be installed (libraw-bin); elsewhere the test skips.
func TestDNGLibRaw(t *testing.T) {
	for _, tool := range []string{"4channels", "unprocessed_raw"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s (libraw-bin) is required under CI", tool)
			}
			t.Skipf("%s (libraw-bin) is not installed", tool)
		}
	}
	peerJobs(t, "tifffile", "dng_peer.py")
}
