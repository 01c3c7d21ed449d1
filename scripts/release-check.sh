#!/usr/bin/env bash
# The release, built and checked as a user receives it, offline (the Go
# module proxy aside):
#   goreleaser v2.15.1, installed once with `go install` into the Go bin
#   directory when missing (about 16 minutes on 2 cores the first time);
#   `goreleaser check`, then `goreleaser release --snapshot --clean`
#   (every archive and package into dist/, nothing published);
#   each archive holds depthspace, depthspace-s3, the completions and the
#   man pages; the .deb and .rpm install both programs and the man pages,
#   with their Section, Priority, description and licence filled;
#   lintian finds no error in the .deb;
#   the .deb unpacked into a scratch root: its depthspace --version, its
#   depthspace-s3 run directly, one s3:// run handed by its depthspace to
#   its depthspace-s3 (against 127.0.0.1 where no server listens: the
#   error line can only come from the companion's S3 client), and a
#   hand-over from depthspace of another version refused.
#
# Usage: scripts/release-check.sh       (KEEP=1 keeps the temp dir)
# Needs dpkg-deb, lintian and rpm (.ci/run installs them when missing).
# Prints one line per step with its time; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
GORELEASER_VERSION=v2.15.1
. scripts/e2e-lib.sh
e2e_tempdir release

gobin=$(go env GOBIN)
gobin=${gobin:-$(go env GOPATH)/bin}
gr=$gobin/goreleaser
if ! "$gr" --version 2>/dev/null | grep -q "GitVersion: *$GORELEASER_VERSION\$"; then
  step "installing goreleaser $GORELEASER_VERSION into $gobin (about 16 minutes on 2 cores)"
  go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
fi

step "goreleaser check"
"$gr" check >"$T/check.log" 2>&1 || { cat "$T/check.log"; fail "goreleaser check"; }
step "goreleaser release --snapshot --clean"
"$gr" release --snapshot --clean >"$T/release.log" 2>&1 || fail "goreleaser release --snapshot"

# The version goreleaser gave the snapshot, from its metadata.
version=$(/usr/bin/python3 -c 'import json; print(json.load(open("dist/metadata.json"))["version"])')
step "snapshot $version built: $(cd dist && ls ./*.tar.gz ./*.zip ./*.deb ./*.rpm | wc -l) archives and packages"

# has LISTING NAME...: every NAME is a line of LISTING (a file).
has() {
  local listing=$1; shift
  for name; do grep -qxF -- "$name" "$listing" || fail "$(basename "$listing" .list) lacks $name"; done
}
man=(depthspace.1.gz depthspace-space-to-depth.1.gz depthspace-depth-to-space.1.gz depthspace-info.1.gz)
comp=(completions/depthspace.bash completions/_depthspace completions/depthspace.fish completions/depthspace.ps1)

step "archives: both programs, the completions, the man pages"
for a in dist/*.tar.gz dist/*.zip; do
  list=$T/$(basename "$a").list
  case $a in
    *.zip) exe=.exe; /usr/bin/python3 -c 'import sys, zipfile; print(*zipfile.ZipFile(sys.argv[1]).namelist(), sep="\n")' "$a" >"$list" ;;
    *) exe=; tar -tzf "$a" >"$list" ;;
  esac
  has "$list" "depthspace$exe" "depthspace-s3$exe" "${comp[@]}" "${man[@]/#/manpages/}"
done

step "packages: fields and contents"
deb=dist/depthspace_${version}_linux_amd64.deb
rpmf=dist/depthspace_${version}_linux_amd64.rpm
[ -f "$deb" ] && [ -f "$rpmf" ] || fail "no $deb or $rpmf"
for field in Section Priority Description Maintainer Homepage; do
  [ -n "$(dpkg-deb -f "$deb" "$field")" ] || fail "$deb: empty $field"
done
dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|' >"$T/deb.list"
# A symbolic link is listed "NAME -> TARGET": its NAME is the field before.
dpkg-deb -c "$deb" | awk '$(NF-1) == "->" {print $(NF-2)}' | sed 's|^\./|/|' >>"$T/deb.list"
rpm -qlp "$rpmf" >"$T/rpm.list" 2>/dev/null
installed=(/usr/bin/depthspace /usr/bin/depthspace-s3 /usr/share/doc/depthspace/copyright
  /usr/share/man/man1/depthspace-s3.1.gz "${man[@]/#//usr/share/man/man1/}")
has "$T/deb.list" "${installed[@]}"
has "$T/rpm.list" "${installed[@]}"
for tag in LICENSE SUMMARY DESCRIPTION URL; do
  [ -n "$(rpm -qp --qf "%{$tag}" "$rpmf" 2>/dev/null | grep -v '^(none)$')" ] || fail "$rpmf: empty $tag"
done

step "lintian $deb"
lintian --fail-on error "$deb" >"$T/lintian.log" 2>&1 || { cat "$T/lintian.log"; fail "lintian found errors"; }
grep -v '^running with root' "$T/lintian.log" || true

step "the .deb unpacked: --version, and one s3:// run handed over"
root=$T/root
dpkg-deb -x "$deb" "$root"
bin=$root/usr/bin
got=$("$bin/depthspace" --version)
[ "$got" = "depthspace $version" ] || fail "depthspace --version: $got, want depthspace $version"
got=$("$bin/depthspace-s3" --version)
[ "$got" = "depthspace $version" ] || fail "depthspace-s3 --version: $got, want depthspace $version"
port=$(free_ports 1)
# PATH without the companion: depthspace finds it next to itself.
s3env=(env -i "PATH=/usr/bin:/bin" "HOME=$T" "AWS_ENDPOINT_URL=http://127.0.0.1:$port"
  AWS_ACCESS_KEY_ID=AKTEST AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1)
code=0
"${s3env[@]}" "$bin/depthspace" info s3://bucket/in.npy >"$T/handover.out" 2>"$T/handover.err" || code=$?
# One line, from the companion: it names the URL and the endpoint; the
# system's words for the refusal follow (the SDK's dial error).
want="depthspace: s3://bucket/in.npy: cannot reach http://127.0.0.1:$port: *connection refused"
[ $code = 2 ] && [[ "$(cat "$T/handover.err")" == $want ]] && [ "$(wc -l <"$T/handover.err")" = 1 ] && [ ! -s "$T/handover.out" ] ||
  fail "depthspace info s3://… (exit $code, stderr: $(cat "$T/handover.err")): want exit 2 and: $want"
# What depthspace of another version sets when it hands a run over.
code=0
"${s3env[@]}" DEPTHSPACE_COMPANION="$bin/depthspace-s3" DEPTHSPACE_VERSION=0.0.0-other \
  "$bin/depthspace-s3" info s3://bucket/in.npy >"$T/other.out" 2>"$T/other.err" || code=$?
[ $code = 2 ] && grep -q "^depthspace: s3://bucket/in.npy: depthspace-s3 is version $version and depthspace is version 0.0.0-other: " "$T/other.err" ||
  fail "a hand-over from another version (exit $code, stderr: $(cat "$T/other.err")): want exit 2 and both versions named"
step "release check passed"
