package pipeline

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ShownName is a path or member name as a text report or an error line
// shows it (SPEC: names are shown with control characters, newlines and
// invalid UTF-8 escaped, so a line stays one line): as it is when every
// character is printable, else quoted and escaped as Go's %q does
// ("a\x1b[31m", "out\n0", "\xff"). --json and --junit carry the exact
// name instead.
func ShownName(s string) string {
	if !hasAny(s, unprintable) {
		return s
	}
	return strconv.Quote(s) // invalid UTF-8 as \xNN
}

// Escaped is s with every character that is not printable, and every
// byte that is not UTF-8, written as %q writes it (\n, \x1b, \xff,
// \u2028) and no quotes added: an error line made from a name still
// shows as one line.
func Escaped(s string) string {
	return EscapeWhere(s, unprintable, func(b *strings.Builder, c string) {
		q := strconv.Quote(c)
		b.WriteString(q[1 : len(q)-1])
	})
}

// shownNames lists member names for an error line, each as ShownName
// shows it and an empty one as "", so that it is seen.
func shownNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = ShownName(n)
		if n == "" {
			q[i] = `""`
		}
	}
	return strings.Join(q, ", ")
}

func unprintable(r rune) bool { return !unicode.IsGraphic(r) }

// hasAny says whether s holds a byte that is not UTF-8 or a character
// bad says is one.
func hasAny(s string, bad func(rune) bool) bool {
	for _, r := range s {
		if r == utf8.RuneError || bad(r) {
			return true
		}
	}
	return false
}

// EscapeWhere is s with each byte that is not UTF-8, and each character
// bad says is one, written by esc (given the byte or the character's
// bytes); s itself when there are none.
func EscapeWhere(s string, bad func(rune) bool, esc func(b *strings.Builder, c string)) string {
	if !hasAny(s, bad) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || bad(r) {
			esc(&b, s[i:i+n])
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
