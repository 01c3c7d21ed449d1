package compare

import "github.com/depthspace/depthspace/internal/pipeline"

// Name is a member or file name as a text report or an error line shows
// it: pipeline.ShownName (as it is when printable, else %q-quoted).
func Name(s string) string { return pipeline.ShownName(s) }

// Escaped is s with its unprintable characters and bytes that are not
// UTF-8 escaped as %q writes them, no quotes added: pipeline.Escaped.
func Escaped(s string) string { return pipeline.Escaped(s) }
