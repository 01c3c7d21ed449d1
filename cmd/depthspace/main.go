// No goroutine that watches the container's CPU limit to adjust
// GOMAXPROCS (Go 1.25's default): it starts with every run, a few ms
// long, and runs that move data set GOMAXPROCS themselves, which stops
// the adjustments anyway (fileio.SpareP).
//
//go:debug updatemaxprocs=0

// Command depthspace performs space-to-depth and depth-to-space on tensor
// files. The command tree is internal/cli; this main links no place but
// local files and standard streams, and hands a run naming an s3:// URL
// to its companion, depthspace-s3 (cmd/depthspace-s3).
package main

import (
	"os"

	"github.com/depthspace/depthspace/internal/cli"
)

// version is stamped by the release build (-ldflags "-X main.version=…").
var version = ""

func main() { os.Exit(cli.Main(version)) }
