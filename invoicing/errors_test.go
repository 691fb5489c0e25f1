package invoicing

import (
	"errors"
	"fmt"
	"testing"
)

func TestKindOf(t *testing.T) {
	t.Parallel()
	notFound := &Error{Kind: NotFound, Code: "not_found", Title: "Resource not found", Message: "x: not found"}
	for _, c := range []struct {
		err  error
		want Kind
	}{
		{nil, Internal},
		{errors.New("plain"), Internal},
		{notFound, NotFound},
		{fmt.Errorf("get: %w", notFound), NotFound},
		{fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", &Error{Kind: Unavailable})), Unavailable},
		{ErrInvalidMode, Invalid},
		{ErrInvalidCompany, Invalid},
	} {
		if got := KindOf(c.err); got != c.want {
			t.Errorf("KindOf(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestDefine(t *testing.T) {
	t.Parallel()
	e := Define(Error{Kind: Conflict, Code: "test_define_conflict", Title: "Test conflict", Message: "test: conflict"})
	if e.Error() != "test: conflict" || !errors.Is(fmt.Errorf("w: %w", e), e) {
		t.Fatalf("Define gave %#v", e)
	}
	// The same code again, alike: allowed (errors may share a code).
	Define(Error{Kind: Conflict, Code: "test_define_conflict", Title: "Test conflict", Detail: "Another detail.", Message: "test: other"})
	if info, ok := LookupCode("test_define_conflict"); !ok || info.Kind != Conflict || info.Title != "Test conflict" {
		t.Fatalf("LookupCode = %+v, %v", info, ok)
	}
	found := false
	for _, c := range Codes() {
		found = found || c.Code == "test_define_conflict"
	}
	if !found {
		t.Fatal("Codes does not list a defined code")
	}
	for name, bad := range map[string]Error{
		"no code":     {Kind: Conflict, Title: "T", Message: "m"},
		"internal":    {Code: "test_define_internal", Title: "T", Message: "m"},
		"no title":    {Kind: Conflict, Code: "test_define_untitled", Message: "m"},
		"other kind":  {Kind: Invalid, Code: "test_define_conflict", Title: "Test conflict", Message: "m"},
		"other title": {Kind: Conflict, Code: "test_define_conflict", Title: "Another", Message: "m"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Define did not panic", name)
				}
			}()
			Define(bad)
		}()
	}
}

func TestKindString(t *testing.T) {
	t.Parallel()
	for k, want := range map[Kind]string{Internal: "internal", NotFound: "not found", Unavailable: "unavailable", Kind(200): "Kind(200)"} {
		if got := k.String(); got != want {
			t.Errorf("%d: %q, want %q", k, got, want)
		}
	}
}
