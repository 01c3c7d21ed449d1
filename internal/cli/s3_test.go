package cli

// The tests run with s3:// built in, as depthspace-s3 has it (s3.go);
// TestBuilds runs plain depthspace, which hands such runs over.
import _ "github.com/depthspace/depthspace/internal/io/s3"
