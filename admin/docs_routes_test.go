package admin_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every admin route of admin.go is in the admin API's table of
// docs/operators.md: its path in full (parameters in braces, any name), or
// its end after an ellipsis (…/usage/minutes).
func TestAdminRoutesDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/operators.md")
	if err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{\w+\}|:\w+`)
	documented := map[string]bool{}
	var ends []string
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		for _, p := range regexp.MustCompile("(/admin/v1/[^\\s?`]*|…/[^\\s?`]*)").FindAllString(line, -1) {
			p = param.ReplaceAllString(p, "{}")
			if end, ok := strings.CutPrefix(p, "…"); ok {
				ends = append(ends, end)
			} else {
				documented[p] = true
			}
		}
	}
	for _, rt := range adminRoutes(t) {
		p := param.ReplaceAllString(rt[1], "{}")
		if documented[p] || slices.ContainsFunc(ends, func(end string) bool { return strings.HasSuffix(p, end) }) {
			continue
		}
		t.Errorf("%s %s is not in docs/operators.md's table of the admin API", rt[0], rt[1])
	}
}
