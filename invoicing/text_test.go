package invoicing

import "testing"

// The characters that hide text or reverse it are found wherever they are;
// the letters, accents, spaces and symbols of real names are not.
func TestHiddenRune(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    string
		want rune // 0: none
	}{
		{"Kianda Lda", 0},
		{"Sociedade Mineira de Catoca, S.A.", 0},
		{"João Gonçalves & Filhos", 0},
		{"Ñandú — Comércio (Luanda)", 0},
		{"Empresa\u00a0Nova", 0}, // a no-break space shows as a space
		{"日本語 العربية", 0},
		{"key 🔑 prod", 0},
		{"invoice\u202Efdp.exe", 0x202E}, // right-to-left override
		{"a\u202Ab", 0x202A},
		{"a\u2066b\u2069", 0x2066}, // isolates
		{"a\u200Fb", 0x200F},       // right-to-left mark
		{"a\u061Cb", 0x061C},       // Arabic letter mark
		{"Kian\u200Dda", 0x200D},   // zero-width joiner
		{"Kian\u200Bda", 0x200B},   // zero-width space
		{"Kian\u200Cda", 0x200C},
		{"Kian\u2060da", 0x2060}, // word joiner
		{"\uFEFFKianda", 0xFEFF}, // byte order mark
		{"Kianda\u2028Lda", 0x2028},
		{"Kianda\u2029Lda", 0x2029},
		{"Kian\u00ADda", 0x00AD}, // soft hyphen
		{"Kian\u034Fda", 0x034F}, // combining grapheme joiner
		{"\u3164", 0x3164},       // Hangul filler
		{"a\uE000b", 0xE000},     // private use
		{"tag\U000E0041", 0xE0041},
	} {
		r, ok := HiddenRune(c.s)
		if ok != (c.want != 0) || r != c.want {
			t.Errorf("HiddenRune(%+q) = %U, %v; want %U", c.s, r, ok, c.want)
		}
	}
	if got := HiddenMessage(0x202E); got != "must not contain invisible or direction-changing characters (U+202E)" {
		t.Errorf("HiddenMessage: %q", got)
	}
}
