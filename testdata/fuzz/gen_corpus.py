"""Writes the committed seed corpora of depthspace's fuzz targets.

    /usr/bin/python3 testdata/fuzz/gen_corpus.py      (from the repository root)

Go reads a target's corpus from <package>/testdata/fuzz/<FuzzName>/, one
"go test fuzz v1" file per input, and `go test` runs every file as a test.
This script (re)writes the seeds it owns, named seed-*; files the fuzzer
found (hex names, minimized) are kept as they are. Inputs: numpy-written
files of every SPEC dtype (npy 1.0/2.0/3.0, C and Fortran order, both byte
orders, S/U/V), the seed pages' worked examples, and known nasty cases.
FuzzDecodeJSON's corpus belongs to the JSON codec and is not touched.
"""
import glob
import io
import os
import struct
import sys

import numpy as np
import numpy.lib.format as npf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def go_quote(b):
    """A Go interpreted string literal holding exactly the bytes b."""
    if isinstance(b, str):
        b = b.encode()
    out = ['"']
    for c in b:
        if c == 0x22:
            out.append('\\"')
        elif c == 0x5C:
            out.append("\\\\")
        elif c == 0x0A:
            out.append("\\n")
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    out.append('"')
    return "".join(out)


def lit(v):
    kind, val = v
    if kind == "bytes":
        return "[]byte(%s)" % go_quote(val)
    if kind == "string":
        return "string(%s)" % go_quote(val)
    return "%s(%s)" % (kind, val)


class Corpus:
    def __init__(self, pkg, target):
        self.dir = os.path.join(ROOT, pkg, "testdata", "fuzz", target)
        os.makedirs(self.dir, exist_ok=True)
        for old in glob.glob(os.path.join(self.dir, "seed-*")):
            os.remove(old)
        self.n = 0

    def add(self, name, *vals):
        self.n += 1
        text = "go test fuzz v1\n" + "".join(lit(v) + "\n" for v in vals)
        path = os.path.join(self.dir, "seed-%03d-%s" % (self.n, name))
        with open(path, "w") as f:
            f.write(text)


def B(x):
    return ("bytes", x)


def S(x):
    return ("string", x)


def npy(arr, version=(1, 0), fortran=False):
    f = io.BytesIO()
    if fortran:
        arr = np.asfortranarray(arr)
    npf.write_array(f, arr, version=version, allow_pickle=False)
    return f.getvalue()


def header(text, major=1, data=b"", pad=True):
    """An npy file with exactly this header text (padded as numpy pads it)."""
    if isinstance(text, str):
        text = text.encode("utf-8")
    fixed = 10 if major == 1 else 12
    if pad:
        text += b" " * ((-(fixed + len(text) + 1)) % 64) + b"\n"
    pre = b"\x93NUMPY" + bytes([major, 0])
    pre += struct.pack("<H", len(text)) if major == 1 else struct.pack("<I", len(text))
    return pre + text + data


rng = np.random.default_rng(7)

DTYPES = ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8",
          "<f2", "<f4", "<f8", "<c8", "<c16", "|S5", "<U3", "|V4",
          ">i2", ">i4", ">u8", ">f2", ">f4", ">f8", ">c8", ">c16", ">U2"]


def sample(descr, shape):
    dt = np.dtype(descr)
    n = int(np.prod(shape))
    raw = rng.integers(0, 256, size=n * dt.itemsize, dtype=np.uint8).tobytes()
    if dt.kind == "b":
        raw = bytes(b & 1 for b in raw)
    if dt.kind == "U":
        cps = rng.integers(0x20, 0x7E, size=n * (dt.itemsize // 4)).astype(dt.byteorder.replace("|", "<") + "u4")
        raw = cps.tobytes()
    return np.frombuffer(raw, dtype=dt).reshape(shape).copy()


def dml_input():
    return np.array([[[[0, 18, 1, 19, 2, 20], [36, 54, 37, 55, 38, 56], [3, 21, 4, 22, 5, 23], [39, 57, 40, 58, 41, 59]],
                      [[9, 27, 10, 28, 11, 29], [45, 63, 46, 64, 47, 65], [12, 30, 13, 31, 14, 32], [48, 66, 49, 67, 50, 68]]]],
                    dtype="<u4")


F4 = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }"

NASTY_NPY = [
    ("hlen-ffffffff", b"\x93NUMPY\x02\x00\xff\xff\xff\xff{"),
    ("hlen-ffff-v1", b"\x93NUMPY\x01\x00\xff\xff{'descr': '<f4'"),
    ("hlen-zero", b"\x93NUMPY\x01\x00\x00\x00"),
    ("hlen-just-over-limit", b"\x93NUMPY\x02\x00\x01\x00\x10\x00{"),
    ("magic-only", b"\x93NUMPY"),
    ("bad-magic", b"\x93NUMPZ\x01\x00\x10\x00{}"),
    ("version-4", b"\x93NUMPY\x04\x00\x10\x00{}"),
    ("version-1-1", header(F4 % "(2,)", 1)[:7] + b"\x01" + header(F4 % "(2,)", 1)[8:]),
    ("huge-dims", header(F4 % "(99999999999, 99999999999)", 1)),
    ("huge-digits", header(F4 % "(99999999999999999999,)", 1)),
    ("product-overflow", header(F4 % "(1, 1, 4611686018427387904, 4)", 1)),
    ("bytes-overflow", header("{'descr': '<c16', 'fortran_order': False, 'shape': (1, 1, 1152921504606846976, 1), }", 1)),
    ("zero-and-overflow", header(F4 % "(0, 4294967296, 4294967296, 4)", 1)),
    ("claims-4GiB", header(F4 % "(1, 1, 65536, 16384)", 1, b"\x00" * 16)),
    ("negative", header(F4 % "(1, -1, 2, 2)", 1, b"\x00" * 16)),
    ("minus-zero", header(F4 % "(-0,)", 1)),
    ("descr-list", header("{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (2,), }", 1, b"\x00" * 16)),
    ("object", header("{'descr': '|O', 'fortran_order': False, 'shape': (1, 1, 2, 2), }", 1, b"\x00" * 32)),
    ("object-O8", header("{'descr': '<O8', 'fortran_order': False, 'shape': (2,), }", 1)),
    ("unterminated-descr", header("{'descr': '<f4, 'fortran_order': False, 'shape': (2,), }", 1)),
    ("unterminated-dict", header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,", 1, pad=False)),
    ("unterminated-quote", header("{'descr", 1, pad=False)),
    ("non-ascii-v1", header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'é': 1}", 1)),
    ("non-ascii-v3-key", header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'é': 1}", 3)),
    ("bad-utf8-v3", header(b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\xff", 3)),
    ("trailing-bytes", header(F4 % "(1, 1, 2, 2)", 1, b"\x00" * 20)),
    ("trailing-text", header(F4 % "(2,)" + " junk", 1)),
    ("nul-padding", header(F4 % "(2,)", 1, pad=False) + b"\x00" * 5),
    ("dup-key", header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 1)),
    ("missing-key", header("{'descr': '<f4', 'shape': (2,), }", 1)),
    ("extra-key", header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 1)),
    ("keys-reordered", header("{'shape': (2, 3), 'fortran_order': True, 'descr': '>i2'}", 1, b"\x00" * 12)),
    ("double-quotes", header('{"descr": "<f4", "fortran_order": False, "shape": (2,)}', 1, b"\x00" * 8)),
    ("py2-longs", header("{'descr': '<f8', 'fortran_order': False, 'shape': (2L, 3L), }", 1)),
    ("not-a-tuple", header(F4 % "(3)", 1)),
    ("list-shape", header(F4 % "[3]", 1)),
    ("float-dim", header(F4 % "(1, 2.0)", 1)),
    ("empty-shape", header(F4 % "()", 1, b"\x00" * 4)),
    ("fortran-int", header("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", 1)),
    ("escape", header("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2,), }", 1)),
    ("descr-native", header("{'descr': '=i4', 'fortran_order': False, 'shape': (2,), }", 1, b"\x00" * 8)),
    ("descr-pipe-multibyte", header("{'descr': '|i4', 'fortran_order': False, 'shape': (2,), }", 1)),
    ("descr-S0", header("{'descr': '|S0', 'fortran_order': False, 'shape': (2,), }", 1)),
    ("descr-U-huge", header("{'descr': '<U999999999', 'fortran_order': False, 'shape': (2,), }", 1)),
    ("descr-V-limit", header("{'descr': '|V1073741824', 'fortran_order': False, 'shape': (9,), }", 1)),
    ("descr-a5", header("{'descr': '|a5', 'fortran_order': False, 'shape': (2,), }", 1, b"\x00" * 10)),
    ("descr-M8", header("{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (2,), }", 1)),
    ("bfloat16-V2", header("{'descr': '<V2', 'fortran_order': False, 'shape': (1, 1, 2, 2), }", 1, b"\x80\x3f" * 4)),
    ("rank-1025", header(F4 % ("(" + "1, " * 1025 + ")"), 2)),
    ("rank-1024", header(F4 % ("(" + "1, " * 1024 + ")"), 2, b"\x00" * 4)),
    ("spaces-tabs", header("{ 'descr' :\t'<f4' ,'fortran_order':False,'shape':( 2 , ) }", 1, b"\x00" * 8)),
]

NASTY_JSON = [
    ("dml-output", None),
    ("object-form", b'{"dtype": "uint32", "shape": [1, 2, 2, 3], "data": [[[[0, 1, 2], [3, 4, 5]], [[9, 10, 11], [12, 13, 14]]]]}'),
    ("deeper-than-shape", b'{"dtype": "uint8", "shape": [1, 1, 2], "data": [[[[1], [2]]]]}'),
    ("wider-than-shape", b'{"dtype": "uint8", "shape": [1, 1, 1, 2], "data": [[[[1, 2, 3]]]]}'),
    ("ragged", b"[[[1, 2], [[3], 4]]]"),
    ("ragged-shallow", b"[[[1, 2], 3]]"),
    ("nesting-70", b"[" * 70 + b"1" + b"]" * 70),
    ("nesting-unclosed", b"[" * 5000),
    ("latin1-string", b'{"dtype": "S1", "shape": [1, 1, 1], "data": [[["\xe9"]]]}'),
    ("stray-ff", b"[[[1, 2\xff]]]"),
    ("cut-utf8", b'[[["\xc3'),
    ("utf16-bom", b"\xff\xfe[\x00[\x00[\x001\x00]\x00]\x00]\x00"),
    ("utf8-bom", b"\xef\xbb\xbf[[[[1, 2], [3, 4]]]]"),
    ("huge-shape", b'{"dtype": "uint8", "shape": [1000000000000], "data": [1, 2, 3]}'),
    ("shape-overflow", b'{"dtype": "float64", "shape": [4611686018427387904, 4], "data": []}'),
    ("negative-shape", b'{"dtype": "uint8", "shape": [1, -1, 2, 2], "data": []}'),
    ("specials", b'[[["NaN", "Infinity", "-Infinity", -0.0]]]'),
    ("uint64-max", b"[[[18446744073709551615, -1]]]"),
    ("big-exponent", b"[[[1e999, 1.5e-999]]]"),
    ("complex", b'{"dtype": "complex64", "shape": [1, 1, 2], "data": [[[[1, 2], [3, 4]]]]}'),
    ("bool", b"[[[[true, false], [false, true]]]]"),
    ("strings-S", b'{"dtype": "S2", "shape": [1, 1, 2], "data": [[["ab", "c"]]]}'),
    ("strings-U", b'{"dtype": "U1", "shape": [1, 1, 2], "data": [[["\\ud83d\\ude00", "x"]]]}'),
    ("dup-key", b'{"dtype": "int8", "data": [1], "data": [2]}'),
    ("trailing-garbage", b"[[[1, 2]]] x"),
    ("empty-array", b"[]"),
    ("zero-size", b'{"dtype": "uint8", "shape": [0, 3, 4, 6], "data": []}'),
]


def main():
    # FuzzNpyHeader: numpy's own files, then the nasty ones.
    c = Corpus("internal/format/npy", "FuzzNpyHeader")
    for d in DTYPES:
        c.add("numpy-v1-" + d.replace("<", "le").replace(">", "be").replace("|", ""), B(npy(sample(d, (1, 2, 2, 2)))))
    for v in [(2, 0), (3, 0)]:
        for d in ["<f4", ">i2", "<U3"]:
            c.add("numpy-v%d-%s" % (v[0], d.replace("<", "le").replace(">", "be")), B(npy(sample(d, (2, 3)), v)))
    for d in ["<f8", ">c16", "|S5", "|u1"]:
        c.add("numpy-fortran-" + d.replace("<", "le").replace(">", "be").replace("|", ""), B(npy(sample(d, (2, 3, 4)), fortran=True)))
    c.add("numpy-0d", B(npy(np.float32(1.5).reshape(()))))
    c.add("numpy-1d", B(npy(np.arange(3, dtype="<i8"))))
    c.add("numpy-empty", B(npy(np.zeros((0, 3), dtype="<f4"))))
    c.add("numpy-dml-input", B(npy(dml_input())))
    for name, data in NASTY_NPY:
        c.add(name, B(data))

    # FuzzRawDescription: --dtype, --shape, the file's size.
    c = Corpus("internal/format/npy", "FuzzRawDescription")
    raw = [
        ("uint32", "1,2,4,6", 192), ("uint32", "1,2,4,6", 191), ("uint32", "1,2,4,6", 193),
        ("FLOAT", "[1, 8, 2, 3]", 192), ("DML_TENSOR_DATA_TYPE_FLOAT16", "1x1x4x4", 32), ("bfloat16", "(2, 2)", 8),
        ("S7", "3", 21), ("U3", "3", 36), ("V6", "1,1,1", 6), (">c16", "2", 32), ("?", "4", 4), ("=i4", "2", 8),
        ("float", "2", 8), ("O", "2", 16), ("string", "2", 2), ("f3", "2", 6), ("|i4", "2", 8),
        ("uint8", "1,-1,2,2", 0), ("uint8", "1,1,99999999999999999999,2", 0), ("uint8", "4611686018427387904,4", 0),
        ("float64", "1,1,1152921504606846976,2", 0), ("uint8", "0,4294967296,4294967296,4", 0),
        ("uint8", "0,99999999999", 0), ("V1073741824", "8", 8589934592), ("V1073741824", "9", -1),
        ("U268435456", "8", 8589934592), ("uint8", "", 1), ("uint8", " 1 , 2 ", 2), ("uint8", "1,,2", 2),
        ("uint8", "1x2x", 2), ("int64", "1152921504606846975", 9223372036854775800),
        ("int64", "1152921504606846976", -9223372036854775808),
    ]
    for i, (dt, shape, size) in enumerate(raw):
        c.add("raw-%02d" % i, S(dt), S(shape), ("int64", size))

    # FuzzParseBlock.
    c = Corpus("internal/ops", "FuzzParseBlock")
    for i, s in enumerate(["2", "2x3", "1x1x4", "2,3", "2X3", "2*3", "0", "-2", "", "x", "2x", "x2", "2xx3",
                           "2,,3", " 2", "+2", "two", "1048576", "1048577", "99999999999999999999",
                           "-9223372036854775809", "9223372036854775807", "1048576x1048576x1048576x1048576",
                           "2x" * 63 + "2", "\xff", "２"]):
        c.add("block-%02d" % i, S(s))

    # FuzzPlan: mode bits (0 op, 1 order, 2 layout, 3 Fortran, 4 misaligned),
    # element size index, shape bytes, block bytes (see fuzzInt).
    c = Corpus("internal/ops", "FuzzPlan")
    plans = [
        (0, 2, [1, 2, 4, 6], [2]), (1, 2, [1, 8, 2, 3], [2]), (3, 2, [1, 8, 2, 3], [2]),
        (4, 1, [1, 4, 6, 2], [2]), (5, 1, [1, 2, 3, 8], [2]), (2 + 8, 3, [2, 3, 4, 6], [2, 3]),
        (16, 9, [3, 8, 5], [4]), (1 + 16, 5, [2, 24, 2, 2, 2], [2, 3, 4]), (0, 4, [1, 1, 6, 6, 6], [3]),
        (4 + 2, 6, [2, 2, 2, 2, 2, 2, 3], [2, 1, 1, 2]), (8 + 4 + 1, 7, [2, 1, 1, 4], [1, 2]),
        (0, 0, [0, 3, 4, 4], [2]), (1, 0, [2, 0, 3, 3], [3]), (0, 0, [1, 1, 0, 0], [0]),
        (0, 0, [1, 1, 2, 2], [0xC0]), (0, 0, [1, 1, 2, 2], [2, 0]), (0, 3, [1, 0xC7, 0, 0], [0xCF]),
        (1, 0, [1, 0, 0xCD, 0], [0xCA]), (0, 0, [1, 1, 0, 0, 0, 0], [0xCA]), (0, 11, [1, 1, 0xC3, 2], [2]),
        (0, 10, [1, 1, 2, 2], [2]), (0, 0, [1, 2], [2]), (0, 0, [1, 0xC0, 2, 2], [2]),
        (0, 0, [0xC8, 0xC8, 0, 0], [0xCA]), (0, 0, [0xC2, 1, 1], [1]), (1, 4, [0xCB, 4, 1, 1], [2]),
        (0, 0, [1, 1, 0xCA, 0xCA], [0xCA]), (0, 0, [1, 1, 4, 4], [2, 2, 2]), (0, 0, [1, 1, 4, 4], []),
    ]
    for i, (mode, elem, shape, block) in enumerate(plans):
        c.add("plan-%02d" % i, ("uint8", mode), ("uint8", elem), B(bytes(shape)), B(bytes(block)))

    dml = dml_input()
    dml_text = (b"[[[[ 0, 18, 1, 19, 2, 20],\n[36, 54, 37, 55, 38, 56],\n[ 3, 21, 4, 22, 5, 23],\n[39, 57, 40, 58, 41, 59]],\n"
                b"[[ 9, 27, 10, 28, 11, 29],\n[45, 63, 46, 64, 47, 65],\n[12, 30, 13, 31, 14, 32],\n[48, 66, 49, 67, 50, 68]]]]")

    # FuzzCLIInput: variant bits (see variantArgs in internal/cli/fuzz_test.go):
    # 0-1 input name (npy, json, raw, sniffed), 2 d2s, 3-4 block (2, 1, 2x1, 3),
    # 5 stdout, 6 -j 2, 7 --to json.
    c = Corpus("internal/cli", "FuzzCLIInput")
    c.add("dml-npy-s2d", B(npy(dml)), ("uint8", 0))
    c.add("dml-npy-s2d-stdout-j2", B(npy(dml)), ("uint8", 32 + 64))
    c.add("dml-npy-sniffed-tojson", B(npy(dml)), ("uint8", 3 + 128))
    c.add("dml-npy-fortran", B(npy(dml, fortran=True)), ("uint8", 0))
    c.add("dml-npy-v2-2x1", B(npy(dml, (2, 0))), ("uint8", 16))
    c.add("dml-npy-v3-block3", B(npy(dml, (3, 0))), ("uint8", 24))
    c.add("dml-npy-d2s", B(npy(dml.reshape(1, 8, 2, 3))), ("uint8", 4))
    for d in DTYPES:
        c.add("npy-" + d.replace("<", "le").replace(">", "be").replace("|", ""), B(npy(sample(d, (1, 2, 4, 6)))), ("uint8", 0))
    c.add("npy-be-f8-d2s-crd-json", B(npy(sample(">f8", (2, 4, 2, 3)))), ("uint8", 4 + 128))
    c.add("npy-V3-stdout", B(npy(sample("|V3", (1, 1, 2, 2)))), ("uint8", 32))
    c.add("npy-bfloat16", B(header("{'descr': '<V2', 'fortran_order': False, 'shape': (1, 1, 2, 2), }", 1, b"\x80\x3f" * 4)), ("uint8", 0))
    for name, data in NASTY_NPY:
        c.add("nasty-" + name, B(data), ("uint8", 0))
    c.add("json-dml-input", B(dml_text), ("uint8", 1))
    c.add("json-dml-input-stdout", B(dml_text), ("uint8", 1 + 32))
    c.add("json-dml-input-sniffed", B(dml_text), ("uint8", 3))
    onnx = b"[[[[0, 6, 1, 7, 2, 8],\n   [12, 18, 13, 19, 14, 20],\n   [3, 9, 4, 10, 5, 11],\n   [15, 21, 16, 22, 17, 23]]]]"
    c.add("json-onnx-s2d-input", B(onnx), ("uint8", 1))
    d2s = b"[[[[0, 1, 2], [3, 4, 5]], [[9, 10, 11], [12, 13, 14]], [[18, 19, 20], [21, 22, 23]], [[27, 28, 29], [30, 31, 32]]]]"
    c.add("json-d2s", B(d2s), ("uint8", 1 + 4))
    for name, data in NASTY_JSON:
        if data is None:
            data = b"[[[[0, 1, 2],\n[3, 4, 5]],\n[[9, 10, 11],\n[12, 13, 14]],\n[[18, 19, 20],\n[21, 22, 23]],\n[[27, 28, 29],\n[30, 31, 32]],\n[[36, 37, 38],\n[39, 40, 41]],\n[[45, 46, 47],\n[48, 49, 50]],\n[[54, 55, 56],\n[57, 58, 59]],\n[[63, 64, 65],\n[66, 67, 68]]]]"
        c.add("json-" + name, B(data), ("uint8", 1))
    c.add("raw-16", B(bytes(range(16))), ("uint8", 2))
    c.add("raw-odd", B(bytes(range(15))), ("uint8", 2))
    c.add("raw-d2s", B(bytes(range(32))), ("uint8", 2 + 4 + 8))
    c.add("empty-sniffed", B(b""), ("uint8", 3))
    c.add("empty-npy", B(b""), ("uint8", 0))
    c.add("garbage-sniffed", B(b"PK\x03\x04 zip"), ("uint8", 3))

    # FuzzCLICommands: cmd bits 0-2 input name (npy, json, raw, sniffed, npz,
    # pb, npy read as json, json with --dtype uint8), 3-6 the command line
    # (cliCommands in internal/cli/fuzz_test.go), 7 standard input.
    c = Corpus("internal/cli", "FuzzCLICommands")
    ncmd = 16
    small = npy(dml)
    json_dml = dml_text
    npz = io.BytesIO()
    np.savez(npz, x=dml, y=sample("<f2", (1, 4, 2, 2)))
    npzc = io.BytesIO()
    np.savez_compressed(npzc, a=sample(">i4", (2, 2, 2, 2)))
    onnx_raw = onnx_typed = None
    try:
        from onnx import TensorProto, helper, numpy_helper
        onnx_raw = numpy_helper.from_array(dml, name="x").SerializeToString()
        onnx_typed = helper.make_tensor("t", TensorProto.FLOAT, [1, 1, 2, 2], [1.0, 2.0, 3.0, 4.0]).SerializeToString()
    except ImportError:
        print("python3-onnx is missing: no ONNX seeds", file=sys.stderr)
    for k in range(ncmd):
        c.add("cmd%02d-npy" % k, B(small), ("uint8", k << 3 | 0))
        c.add("cmd%02d-json" % k, B(json_dml), ("uint8", k << 3 | 1))
        c.add("cmd%02d-npz" % k, B(npz.getvalue()), ("uint8", k << 3 | 4))
        if onnx_raw:
            c.add("cmd%02d-onnx" % k, B(onnx_raw), ("uint8", k << 3 | 5))
    c.add("npz-compressed-info", B(npzc.getvalue()), ("uint8", 4))
    c.add("npz-compressed-s2d", B(npzc.getvalue()), ("uint8", 11 << 3 | 4))
    c.add("npz-stdin", B(npz.getvalue()), ("uint8", 128 | 3 << 3 | 4))
    c.add("npz-truncated", B(npz.getvalue()[:200]), ("uint8", 4))
    c.add("npz-not-zip", B(b"PK\x03\x04" + b"\x00" * 40), ("uint8", 4))
    if onnx_typed:
        c.add("onnx-typed", B(onnx_typed), ("uint8", 5))
        c.add("onnx-typed-convert", B(onnx_typed), ("uint8", 4 << 3 | 5))
        c.add("onnx-truncated", B(onnx_raw[:20]), ("uint8", 5))
        c.add("onnx-huge-dims", B(bytes([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x10, 0x01])), ("uint8", 5))
    c.add("raw-info", B(bytes(range(16))), ("uint8", 2))
    c.add("raw-compare-self", B(bytes(range(16))), ("uint8", 8 << 3 | 2))
    c.add("nan-compare-self", B(npy(np.array([[[[np.nan, -0.0], [np.inf, 1.0]]]], dtype="<f4"))), ("uint8", 8 << 3))
    c.add("stdin-npy-convert", B(small), ("uint8", 128 | 4 << 3))
    for name, data in NASTY_NPY[:20]:
        c.add("nasty-" + name, B(data), ("uint8", 0))

main()
