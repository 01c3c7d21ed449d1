package cli

import "testing"

// TestParseRename: FROM=TO, either side plain or Go-quoted; a plain FROM
// ends at the first "=", a plain TO is the rest.
func TestParseRename(t *testing.T) {
	for _, c := range []struct {
		in, from, to string
		ok           bool
	}{
		{"a=b", "a", "b", true},
		{"a=b=c", "a", "b=c", true},
		{"a=", "a", "", true},
		{"=b", "", "b", true},
		{`"a\x00b"=a_b`, "a\x00b", "a_b", true},
		{`"a=b"="c\xffd"`, "a=b", "c\xffd", true},
		{`a="b"`, "a", "b", true},
		{"ab", "", "", false},
		{`"ab=c`, "", "", false},
		{`"a"b=c`, "", "", false},
		{`a="b"c`, "", "", false},
		{`a="b`, "", "", false},
	} {
		from, to, err := parseRename(c.in)
		if (err == nil) != c.ok || c.ok && (from != c.from || to != c.to) {
			t.Errorf("parseRename(%q) = %q, %q, %v; want %q, %q, ok %v", c.in, from, to, err, c.from, c.to, c.ok)
		}
	}
}
