//go:build s3

package main

// Built with -tags s3, this main is the all-in-one program: s3:// objects
// built in, so no run is handed over; the same program as
// cmd/depthspace-s3, for who wants one binary under the name depthspace.
import _ "github.com/depthspace/depthspace/internal/io/s3"
