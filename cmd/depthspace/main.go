// No goroutine that watches the container's CPU limit to adjust
// GOMAXPROCS (Go 1.25's default): it starts with every run, a few ms
// long, and runs that move data set GOMAXPROCS themselves, which stops
// the adjustments anyway (fileio.SpareP).
//
//go:debug updatemaxprocs=0

// Command depthspace performs space-to-depth and depth-to-space on tensor
// files. The command tree is internal/cli.
package main

import "github.com/depthspace/depthspace/internal/cli"

func main() { cli.Main() }
