#!/bin/sh
# generate.sh VERSION EPOCH: what the release archives and packages hold
# besides the programs, written by the command itself so that they match
# the flags being released (.goreleaser.yaml runs it before the builds):
#   completions/  bash, zsh, fish and PowerShell completions (cobra);
#   manpages/     one gzipped man page per command (the hidden man
#                 command, built with -tags man), dated EPOCH;
#   packaging/changelog.gz  the .deb's changelog entry for VERSION.
set -eu
version=$1 epoch=$2
cd "$(dirname "$0")/.."
rm -rf completions manpages
mkdir -p completions manpages
tool=$(mktemp -d)
trap 'rm -rf "$tool"' EXIT
go build -tags man -ldflags "-X main.version=$version" -o "$tool/depthspace" ./cmd/depthspace
"$tool/depthspace" completion bash >completions/depthspace.bash
"$tool/depthspace" completion zsh >completions/_depthspace
"$tool/depthspace" completion fish >completions/depthspace.fish
"$tool/depthspace" completion powershell >completions/depthspace.ps1
SOURCE_DATE_EPOCH=$epoch "$tool/depthspace" man manpages
# Debian's policy: man pages and changelogs gzipped, without a name or
# time in the gzip header (-n), so that the same commit gives the same
# package.
gzip -9nf manpages/*.1
# nfpm writes the version 1.2.3-rc1 as 1.2.3~rc1 (sorts before 1.2.3).
deb_version=$(printf '%s' "$version" | tr - '~')
{
  printf 'depthspace (%s) unstable; urgency=medium\n\n' "$deb_version"
  printf '  * Release %s: https://github.com/depthspace/depthspace\n\n' "$version"
  printf ' -- depthspace maintainers <depthspace@users.noreply.github.com>  %s\n' "$(date -u -R -d "@$epoch")"
} | gzip -9n >packaging/changelog.gz
