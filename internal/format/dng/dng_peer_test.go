package dng

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	npyfmt "github.com/depthspace/depthspace/internal/format/npy"
)

// The mosaic this package decodes equals what two independent readers
// make of the same files: LibRaw's unprocessed_raw (Debian libraw-bin),
// which writes the whole raw image, margins included, as a 16-bit PGM,
// and dcraw -D -4 (document mode, 16 bits linear), which writes the
// ActiveArea. The files are this package's test writer's (uncompressed,
// and lossless JPEG from the test encoder: encoder and decoder checked
// through a reader that is neither) and python3-tifffile's.
//
// Where a peer cannot read a layout, it is not asked: LibRaw 0.20 and
// dcraw read an uncompressed DNG as one run of rows from the first strip
// (tiles would come out scrambled) and a lossless JPEG DNG in strips from
// its first strip only; dcraw starts a restart interval's first row with
// the predictor of the others (the DNG SDK and T.81 use the left
// neighbour), which only matters with predictors other than 1. LibRaw
// 0.20 also takes JPEG rows of twice their width when the JPEG's
// components times its samples a row times the components again equal
// the image width (tiles half as wide as the image, JPEGs of two
// components): the cases avoid that geometry.
//
// Under CI (CI set) a missing peer fails the test; elsewhere it skips.

func needPeer(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (apt-get install libraw-bin dcraw python3-tifffile)", name)
		}
		t.Skipf("%s is not installed", name)
	}
	return p
}

// readPGM reads a 16-bit binary PGM (P5, maxval > 255: big-endian).
func readPGM(b []byte) (w, h int, px []uint16, err error) {
	f := bytes.Fields(b[:min(len(b), 64)])
	if len(f) < 4 || string(f[0]) != "P5" {
		return 0, 0, nil, fmt.Errorf("not a P5 PGM")
	}
	w, _ = strconv.Atoi(string(f[1]))
	h, _ = strconv.Atoi(string(f[2]))
	// The header is four tokens and a single white space after maxval.
	i := bytes.Index(b, f[3]) + len(f[3]) + 1
	data := b[i:]
	if len(data) < 2*w*h {
		return 0, 0, nil, fmt.Errorf("PGM: %d bytes for %dx%d", len(data), w, h)
	}
	px = make([]uint16, w*h)
	for j := range px {
		px[j] = binary.BigEndian.Uint16(data[2*j:])
	}
	return w, h, px, nil
}

// libRawAsks says whether LibRaw 0.20 and dcraw read this layout.
func (d testDNG) peersRead() bool {
	if d.linear {
		return false
	}
	if d.compression == 1 {
		return d.tile[0] == 0
	}
	if d.tile[0] == 0 && d.rps != 0 && d.rps < d.h {
		return false
	}
	return d.restart == 0 || d.pred == 1
}

func comparePeer(t *testing.T, name string, got []uint16, gw, gh int, want []uint16, w, top, left int) {
	t.Helper()
	for y := 0; y < gh; y++ {
		for x := 0; x < gw; x++ {
			if g, e := got[y*gw+x], want[(y+top)*w+x+left]; g != e {
				t.Fatalf("%s: row %d, column %d: %s has %d, depthspace %d", name, y, x, name, g, e)
			}
		}
	}
}

func TestDNGPeers(t *testing.T) {
	unprocessed := needPeer(t, "unprocessed_raw")
	dcraw := needPeer(t, "dcraw")
	dir := t.TempDir()
	cases := append(dngCases(),
		testDNG{w: 48, h: 40, spp: 1, bps: 12, compression: 1, rps: 40, activeArea: []uint32{1, 3, 39, 45}, subIFD: true},
		testDNG{w: 96, h: 48, spp: 1, bps: 14, compression: 7, tile: [2]int{32, 16}, pred: 1, activeArea: []uint32{2, 2, 46, 94}, bo: binary.BigEndian},
	)
	n := 0
	for i, c := range cases {
		if !c.peersRead() {
			continue
		}
		n++
		t.Run(c.String(), func(t *testing.T) {
			s := c.samples(int64(i))
			file := filepath.Join(dir, fmt.Sprintf("c%d.dng", i))
			if err := os.WriteFile(file, c.build(s), 0o644); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(file)
			_, data, err := DecodeDNG(b)
			if err != nil {
				t.Fatal(err)
			}
			ours := le16(data)
			// LibRaw: the whole raw image.
			if out, err := exec.Command(unprocessed, "-q", file).CombinedOutput(); err != nil {
				t.Fatalf("unprocessed_raw: %v: %s", err, out)
			}
			pgm, err := os.ReadFile(file + ".pgm")
			if err != nil {
				t.Fatalf("unprocessed_raw wrote nothing: %v", err)
			}
			w, h, px, err := readPGM(pgm)
			if err != nil {
				t.Fatal(err)
			}
			if w != c.w || h != c.h {
				t.Fatalf("unprocessed_raw: %dx%d, depthspace %dx%d", w, h, c.w, c.h)
			}
			comparePeer(t, "unprocessed_raw", px, w, h, ours, c.w, 0, 0)
			// dcraw: the ActiveArea.
			out, err := exec.Command(dcraw, "-D", "-4", "-c", file).Output()
			if err != nil {
				t.Fatalf("dcraw: %v", err)
			}
			w, h, px, err = readPGM(out)
			if err != nil {
				t.Fatal(err)
			}
			top, left, bottom, right := 0, 0, c.h, c.w
			if c.activeArea != nil {
				top, left, bottom, right = int(c.activeArea[0]), int(c.activeArea[1]), int(c.activeArea[2]), int(c.activeArea[3])
			}
			if w != right-left || h != bottom-top {
				t.Fatalf("dcraw: %dx%d, the active area is %dx%d", w, h, right-left, bottom-top)
			}
			comparePeer(t, "dcraw", px, w, h, ours, c.w, top, left)
		})
	}
	if n < 20 {
		t.Fatalf("only %d cases for the peers", n)
	}
}

// tifffileDNGs is a Python script writing DNGs with python3-tifffile: a
// 16-bit CFA mosaic in both byte orders, in strips, in tiles and in a
// SubIFD behind a preview; each mosaic is saved next to it as .npy.
const tifffileDNGs = `
import sys, numpy as np, tifffile
out = sys.argv[1]
rng = np.random.default_rng(27)
def tags(area):
    t = [(50706, 'B', 4, (1, 4, 0, 0), True), (33421, 'H', 2, (2, 2), True), (33422, 'B', 4, (1, 2, 0, 1), True),
         (50708, 's', 0, 'Test Cam', True), (50714, 'H', 1, (64,), True), (50717, 'H', 1, (65535,), True),
         (50721, '2i', 9, (1, 1, 0, 1, 0, 1, 0, 1, 1, 1, 0, 1, 0, 1, 0, 1, 1, 1), True)]
    if area:
        t.append((50829, 'I', 4, area, True))
    return t
for name, bo, kw, sub, area in [
        ('le_strips', '<', dict(rowsperstrip=8), False, (1, 2, 39, 46)),
        ('be_strips', '>', dict(rowsperstrip=5), False, None),
        ('le_tiles', '<', dict(tile=(16, 16)), False, None),
        ('be_tiles', '>', dict(tile=(16, 32)), False, (2, 0, 40, 48)),
        ('le_subifd', '<', dict(rowsperstrip=40), True, (1, 1, 39, 47)),
        ('be_subifd_tiles', '>', dict(tile=(32, 16)), True, None)]:
    a = rng.integers(0, 65536, size=(40, 48), dtype=np.uint16)
    np.save(f'{out}/{name}.npy', a)
    with tifffile.TiffWriter(f'{out}/{name}.dng', byteorder=bo) as t:
        if sub:
            t.write(np.zeros((8, 8, 3), np.uint8), photometric='rgb', subfiletype=1, subifds=1,
                    extratags=tags(None)[:1] + tags(None)[3:4], metadata=None, software=False)
            t.write(a, photometric=32803, subfiletype=0, extratags=tags(area)[1:3] + tags(area)[4:], metadata=None, software=False, **kw)
        else:
            t.write(a, photometric=32803, subfiletype=0, extratags=tags(area), metadata=None, software=False, **kw)
`

// TestDNGTifffile: DNGs written by python3-tifffile decode to the mosaic
// it was given, and, where they read the layout (strips), LibRaw and
// dcraw agree.
func TestDNGTifffile(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		needPeer(t, "python3-not-found")
	}
	dir := t.TempDir()
	cmd := exec.Command(py, "-c", tifffileDNGs, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "" && bytes.Contains(out, []byte("No module named")) {
			t.Skipf("python3-tifffile or numpy missing: %s", out)
		}
		t.Fatalf("%v: %s", err, out)
	}
	for _, name := range []string{"le_strips", "be_strips", "le_tiles", "be_tiles", "le_subifd", "be_subifd_tiles"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, name+".dng"))
			if err != nil {
				t.Fatal(err)
			}
			h, data, err := DecodeDNG(b)
			if err != nil {
				t.Fatal(err)
			}
			npy, err := os.ReadFile(filepath.Join(dir, name+".npy"))
			if err != nil {
				t.Fatal(err)
			}
			n, err := npyfmt.ParseNpy(npy)
			if err != nil {
				t.Fatal(err)
			}
			if format.ShapeString(h.Shape) != format.ShapeString(n.Shape) || !bytes.Equal(data, npy[n.DataOffset:]) {
				t.Fatalf("decoded %s differs from the mosaic tifffile wrote (%s)", format.ShapeString(h.Shape), format.ShapeString(n.Shape))
			}
			if cfa, err := DNGCFA(b); err != nil || cfa == "" {
				t.Errorf("cfa: %q %v", cfa, err)
			}
			if name == "le_tiles" || name == "be_tiles" || name == "be_subifd_tiles" {
				return // the peers read uncompressed tiles as rows
			}
			ours := le16(data)
			file := filepath.Join(dir, name+".dng")
			if out, err := exec.Command(needPeer(t, "unprocessed_raw"), "-q", file).CombinedOutput(); err != nil {
				t.Fatalf("unprocessed_raw: %v: %s", err, out)
			}
			pgm, _ := os.ReadFile(file + ".pgm")
			w, hh, px, err := readPGM(pgm)
			if err != nil || w != 48 || hh != 40 {
				t.Fatalf("unprocessed_raw: %dx%d %v", w, hh, err)
			}
			comparePeer(t, "unprocessed_raw", px, w, hh, ours, 48, 0, 0)
		})
	}
}
