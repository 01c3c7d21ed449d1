package zarr

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/testpeer"
)

// readStore opens a store directory and returns each member's name,
// header and data.
func readStore(t *testing.T, dir string) map[string]format.Member {
	t.Helper()
	d, ok := fileio.OpenDir(dir)
	if !ok {
		t.Fatalf("%s is not a directory", dir)
	}
	ar, err := open(d, format.OpenOptions{Threads: 3})
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	out := map[string]format.Member{}
	for _, m := range ar.Members {
		data, err := m.Lazy.InflateData()
		if err != nil {
			t.Fatalf("%s member %q: %v", dir, m.Name, err)
		}
		m.Data = data
		out[m.Name] = m
	}
	return out
}

// npyData reads an npy file's header and data.
func npyData(t *testing.T, path string) (format.Header, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := npy.ParseNpy(b)
	if err != nil {
		t.Fatal(err)
	}
	return n.Header, b[n.DataOffset:]
}

// v2Cases has zarr-python 2 write one array per case into dir/NAME.zarr,
// and numpy its values (z[:], C order) into dir/NAME.npy.
const v2Cases = `
import sys, os
import numpy as np, zarr, numcodecs
from numcodecs import Blosc, Zlib, GZip, Zstd, LZ4
out = sys.argv[1]
rng = np.random.default_rng(5)
def data(shape, dtype):
    n = int(np.prod(shape))
    if np.dtype(dtype).kind == 'b':
        return (rng.integers(0, 2, n) == 1).reshape(shape)
    if np.dtype(dtype).kind == 'S':
        return np.array([b'ab', b'xyz', b''] * (n // 3 + 1))[:n].astype(dtype).reshape(shape)
    if np.dtype(dtype).kind == 'c':
        return (np.arange(n) + 1j * np.arange(n)[::-1]).astype(dtype).reshape(shape)
    return (np.arange(n) % 251 + rng.integers(0, 3, n)).astype(dtype).reshape(shape)
def case(name, shape, chunks, dtype, compressor, order='C', sep='.', fill=0, missing=False):
    z = zarr.open(os.path.join(out, name + '.zarr'), mode='w', shape=shape, chunks=chunks, dtype=dtype,
                  compressor=compressor, order=order, dimension_separator=sep, fill_value=fill)
    a = data(shape, dtype)
    if missing:
        # Write only the first chunk row: the rest are missing and read as fill.
        z[:chunks[0]] = a[:chunks[0]]
    else:
        z[...] = a
    np.save(os.path.join(out, name + '.npy'), z[...].copy(order='C'))
shape, chunks = (5, 3, 9, 7), (2, 2, 4, 3)
for cname in ['blosclz', 'lz4', 'lz4hc', 'zlib', 'zstd']:
    for sh in [0, 1, 2]:
        for dt in ['<f4', '<i2', '|u1', '<f8']:
            case('blosc-%s-%d-%s' % (cname, sh, dt.strip('<|')), shape, chunks, dt, Blosc(cname=cname, clevel=5, shuffle=sh))
case('blosc-blocksize', (64, 1000), (33, 900), '<f4', Blosc(cname='lz4', shuffle=1, blocksize=4096))
for name, comp in [('none', None), ('zlib', Zlib(level=3)), ('gzip', GZip()), ('zstd', Zstd()), ('lz4', LZ4())]:
    case(name, shape, chunks, '<i4', comp)
case('fortran', shape, chunks, '<f4', Blosc(), order='F')
case('fortran-big', shape, chunks, '>i4', Zstd(), order='F', sep='/')
case('slash', shape, chunks, '<u2', Zlib(), sep='/')
case('big-endian', shape, chunks, '>f8', Blosc(cname='zstd', shuffle=2))
case('fill-missing', shape, chunks, '<f4', Blosc(), fill=-2.5, missing=True)
case('fill-nan', shape, chunks, '<f4', None, fill=float('nan'), missing=True)
case('fill-int-missing', shape, chunks, '>i2', Zstd(), fill=-7, missing=True, sep='/', order='F')
case('bool', (7, 11), (3, 4), '|b1', Zlib(), fill=True, missing=True)
case('complex', (6, 5), (4, 4), '<c8', Blosc(), fill=(1+2j), missing=True)
case('bytes', (6, 5), (4, 4), '|S3', None, fill=b'q', missing=True)
case('one-chunk', (4, 4), (4, 4), '<f4', Blosc())
case('leading-ones', (3, 2, 9, 7), (1, 1, 4, 3), '<f4', Blosc())
case('leading-ones-missing', (3, 2, 9, 7), (1, 2, 4, 7), '>i2', Zstd(), fill=5, missing=True)
case('chunk-bigger', (3, 5), (8, 8), '<f4', Blosc())
case('rank1', (1000,), (77,), '<i8', LZ4())
case('scalar', (), (), '<f8', None, fill=3.25)
g = zarr.open_group(os.path.join(out, 'group.zarr'), mode='w')
g.create_dataset('a', data=np.arange(12, dtype='<f4').reshape(3, 4), chunks=(2, 2))
g.create_group('sub').create_group('deeper').create_dataset('b', data=np.arange(6, dtype='>i2'), chunks=(4,))
np.save(os.path.join(out, 'group-a.npy'), g['a'][...])
np.save(os.path.join(out, 'group-b.npy'), g['sub/deeper/b'][...])
`

// TestReadZarrPython: every v2 case zarr-python writes (Blosc with each
// cname and shuffle, the other compressors, F order, both separators,
// byte orders, fill values for missing chunks, edge chunks, a scalar, a
// group) reads as the values numpy reads from it.
func TestReadZarrPython(t *testing.T) {
	py := testpeer.Python(t, "zarr")
	dir := t.TempDir()
	if out, err := exec.Command(py, "-c", v2Cases, dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	stores, _ := filepath.Glob(filepath.Join(dir, "*.zarr"))
	if len(stores) < 70 {
		t.Fatalf("zarr-python wrote %d stores", len(stores))
	}
	for _, st := range stores {
		name := filepath.Base(st)
		if name == "group.zarr" {
			continue
		}
		m := readStore(t, st)[""]
		h, want := npyData(t, st[:len(st)-len(".zarr")]+".npy")
		if format.ShapeString(m.Header.Shape) != format.ShapeString(h.Shape) || !m.Header.DType.SameLayout(h.DType) {
			t.Errorf("%s: shape %v %s, numpy %v %s", name, m.Header.Shape, m.Header.DType, h.Shape, h.DType)
			continue
		}
		if !bytes.Equal(m.Data, want) {
			t.Errorf("%s: data differ from numpy's", name)
		}
	}
	g := readStore(t, filepath.Join(dir, "group.zarr"))
	if len(g) != 2 {
		t.Fatalf("group: members %v", g)
	}
	for name, npy := range map[string]string{"a": "group-a.npy", "sub/deeper/b": "group-b.npy"} {
		_, want := npyData(t, filepath.Join(dir, npy))
		if !bytes.Equal(g[name].Data, want) {
			t.Errorf("group member %s: data differ", name)
		}
	}
}
