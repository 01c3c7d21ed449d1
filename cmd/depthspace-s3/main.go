// As cmd/depthspace: no goroutine adjusting GOMAXPROCS to the
// container's CPU limit.
//
//go:debug updatemaxprocs=0

// Command depthspace-s3 is depthspace with s3:// objects built in
// (internal/io/s3): the companion that plain depthspace hands every run
// naming an s3:// URL, and a full program when run directly. Install it
// next to depthspace, of the same version:
//
//	go install github.com/depthspace/depthspace/cmd/depthspace-s3@VERSION
package main

import (
	"os"

	"github.com/depthspace/depthspace/internal/cli"
	_ "github.com/depthspace/depthspace/internal/io/s3"
)

// version is stamped by the release build (-ldflags "-X main.version=…").
var version = ""

func main() { os.Exit(cli.Main(version)) }
