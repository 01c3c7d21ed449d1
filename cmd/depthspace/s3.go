//go:build s3

package main

// Built with -tags s3, this is depthspace-s3: the whole program with
// s3:// objects built in (companion.go).
import _ "github.com/depthspace/depthspace/internal/io/s3"
