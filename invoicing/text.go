package invoicing

import (
	"fmt"
	"unicode"
)

// HiddenRune returns the first character of s that a reader cannot see or
// that changes how the text around it reads: format characters (the
// bidirectional controls such as U+202E, which shows "exe.txt" for
// "txt.exe", zero-width spaces and joiners, the byte order mark U+FEFF, the
// soft hyphen), line and paragraph separators (U+2028, U+2029), the other
// default-ignorable characters (Hangul fillers, U+034F), and private-use
// characters. Names and descriptions people read are refused with one, as
// X-Actor is: displayed as they are, they spoof other text. Spaces and
// controls are the callers' own rules.
func HiddenRune(s string) (rune, bool) {
	for _, r := range s {
		if Hidden(r) {
			return r, true
		}
	}
	return 0, false
}

// Hidden reports whether r is one HiddenRune finds.
func Hidden(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Other_Default_Ignorable_Code_Point)
}

// HiddenMessage is what a field with hidden character r is told, after its
// name: "must not contain invisible or direction-changing characters (U+202E)".
func HiddenMessage(r rune) string {
	return fmt.Sprintf("must not contain invisible or direction-changing characters (U+%04X)", r)
}
