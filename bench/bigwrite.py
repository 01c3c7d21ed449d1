"""One output file from several writers: what each way of writing it
gives at -j 1 and -j 2, on tmpfs and on the disk (bench/ioprobe write).

  /usr/bin/python3 bench/bigwrite.py [--rounds N] [--mib M] [--dirs /dev/shm,/tmp]
      [--modes pwrite,pwrite-fds,...]

Every mode at every -j runs once per round, in turn, in each directory;
printed: the median seconds and GB/s of each, min-max, and the median of
the per-round ratio -j 2 / -j 1 (below 1: the second writer helped). The
probe times the writes alone (first write to last close), so that the
figures are the file system's, not the tool's set-up.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = "pwrite,pwrite-fds,fallocate,odirect,mmap,mmap-fault,vmsplice,files"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--dirs", default="/dev/shm,/tmp")
    ap.add_argument("--modes", default=MODES)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        probe = os.path.join(tmp, "ioprobe")
        subprocess.run(["go", "build", "-o", probe, "./bench/ioprobe"], cwd=ROOT, check=True)
        res = {}
        for r in range(a.rounds):
            for d in a.dirs.split(","):
                for m in a.modes.split(","):
                    for j in (1, 2):
                        dst = os.path.join(d, f"depthspace-bigwrite-{os.getpid()}")
                        out = subprocess.run([probe, "write", m, dst, str(a.mib), str(j)],
                                             capture_output=True, text=True)
                        if out.returncode != 0:
                            res.setdefault((d, m, j), []).append(None)
                            if r == 0:
                                print(f"{d} {m} -j {j}: {out.stderr.strip()}", file=sys.stderr)
                            continue
                        res.setdefault((d, m, j), []).append(float(out.stdout.split(": ")[1].split(" s")[0]))
        print(f"{a.mib} MiB, {a.rounds} rounds; seconds median (min-max), GB/s, -j 2 / -j 1 per round")
        for d in a.dirs.split(","):
            for m in a.modes.split(","):
                s1, s2 = res[(d, m, 1)], res[(d, m, 2)]
                if None in s1 or None in s2:
                    print(f"  {d:9s} {m:11s} failed")
                    continue
                ratio = statistics.median(y / x for x, y in zip(s1, s2))
                line = f"  {d:9s} {m:11s}"
                for s in (s1, s2):
                    med = statistics.median(s)
                    line += f"  {med:6.3f} s ({min(s):.3f}-{max(s):.3f}) {a.mib * 1.048576e-3 / med:5.2f} GB/s"
                print(line + f"  x{ratio:.2f}")


if __name__ == "__main__":
    main()
