#!/usr/bin/python3
"""Peak memory of a batch over a prefix of many keys, against one of few.

A stub S3 server on 127.0.0.1 serves generated ListObjectsV2 pages (1,000
keys a page, as S3 does) of N keys p/kNNNNNNNN.npy, the same small npy
object for any of them, and takes PUTs. depthspace-s3 runs

    s2d -b 2 --shard 0/N --progress never --out-dir s3://b/out/ s3://b/p/

so that one object is worked on and every key is listed, while this
script samples the process's RssAnon every 5 ms. The figure is the peak
for each N and the difference between them.

    /usr/bin/python3 bench/s3list.py [--keys 10000,1000000] [--rounds 2]

Needs Go (it builds depthspace-s3 from this checkout) and numpy.
"""
import argparse
import http.server
import io
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def npy_bytes():
    b = io.BytesIO()
    np.save(b, np.arange(4 * 4 * 4, dtype=np.float32).reshape(1, 4, 4, 4))
    return b.getvalue()


class Stub(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    keys = 0
    body = b""

    def log_message(self, *a):
        pass

    def send(self, code, data=b"", ctype="application/xml", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        if q.get("list-type") == ["2"]:
            return self.page(q)
        if u.path.startswith("/b/p/k"):
            return self.object()
        self.send(404, b"<Error><Code>NoSuchKey</Code><Message>none</Message></Error>")

    do_HEAD = do_GET

    def page(self, q):
        prefix = q.get("prefix", [""])[0]
        if prefix != "p/":
            return self.send(200, self.listing(prefix, [], None))
        start = int(q.get("continuation-token", ["0"])[0])
        end = min(start + 1000, self.keys)
        nxt = str(end) if end < self.keys else None
        return self.send(200, self.listing(prefix, range(start, end), nxt))

    def listing(self, prefix, idx, nxt):
        items = "".join(
            f"<Contents><Key>p/k{i:08d}.npy</Key><Size>{len(self.body)}</Size>"
            f"<ETag>\"e\"</ETag><StorageClass>STANDARD</StorageClass>"
            f"<LastModified>2026-01-01T00:00:00.000Z</LastModified></Contents>"
            for i in idx)
        more = f"<IsTruncated>true</IsTruncated><NextContinuationToken>{nxt}</NextContinuationToken>" if nxt else "<IsTruncated>false</IsTruncated>"
        return (f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                f"<Name>b</Name><Prefix>{prefix}</Prefix><KeyCount>{len(idx)}</KeyCount><MaxKeys>1000</MaxKeys>"
                f"{more}{items}</ListBucketResult>").encode()

    def object(self):
        data, code, extra = self.body, 200, [("ETag", '"e"')]
        m = re.match(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if m:
            a = int(m.group(1))
            b = int(m.group(2)) if m.group(2) else len(data) - 1
            b = min(b, len(data) - 1)
            extra.append(("Content-Range", f"bytes {a}-{b}/{len(data)}"))
            data, code = data[a:b + 1], 206
        self.send(code, data, "application/octet-stream", extra)

    def do_PUT(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        self.send(200, extra=[("ETag", '"e"')])


def peak_rss_anon(cmd, env):
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.005)
    err = p.stderr.read().decode()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {err}")
    return peak / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", default="10000,1000000")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    Stub.body = npy_bytes()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as d:
        prog = os.path.join(d, "depthspace-s3")
        subprocess.run(["go", "build", "-o", prog, "./cmd/depthspace-s3"], cwd=ROOT, check=True)
        env = dict(os.environ, AWS_ENDPOINT_URL=f"http://127.0.0.1:{srv.server_port}",
                   AWS_ACCESS_KEY_ID="k", AWS_SECRET_ACCESS_KEY="s", AWS_REGION="us-east-1",
                   AWS_CONFIG_FILE=os.path.join(d, "none"), AWS_SHARED_CREDENTIALS_FILE=os.path.join(d, "none"))
        for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_CA_BUNDLE", "GOGC", "GOMEMLIMIT"):
            env.pop(k, None)
        print(f"depthspace-s3 {subprocess.run(['git', 'describe', '--always', '--dirty'], cwd=ROOT, capture_output=True, text=True).stdout.strip()}, "
              f"{os.cpu_count()} cores, load average {open('/proc/loadavg').read().split()[0]}")
        peaks = {}
        for n in [int(x) for x in a.keys.split(",")]:
            Stub.keys = n
            runs = []
            for _ in range(a.rounds):
                t = time.monotonic()
                rss = peak_rss_anon([prog, "s2d", "-b", "2", "--shard", f"0/{n}", "--progress", "never",
                                     "--out-dir", "s3://b/out/", "s3://b/p/"], env)
                runs.append((rss, time.monotonic() - t))
            peaks[n] = max(r for r, _ in runs)
            print(f"{n:>9} keys: peak RssAnon " + ", ".join(f"{r:.1f} MiB ({s:.1f} s)" for r, s in runs))
        ns = sorted(peaks)
        if len(ns) > 1:
            print(f"difference {ns[-1]} vs {ns[0]} keys: {peaks[ns[-1]] - peaks[ns[0]]:+.1f} MiB (largest peaks)")
    srv.shutdown()


if __name__ == "__main__":
    main()
