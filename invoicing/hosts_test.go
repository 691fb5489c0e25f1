package invoicing

import (
	"slices"
	"testing"
)

func TestParseOrigins(t *testing.T) {
	good := map[string][]string{
		"":                       nil,
		" , ":                    nil,
		"https://app.example.ao": {"https://app.example.ao"},
		"HTTPS://App.Example.AO:8443, http://localhost:3000": {"https://app.example.ao:8443", "http://localhost:3000"},
	}
	for in, want := range good {
		got, err := ParseOrigins(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseOrigins(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"*", "https://*.example.ao", "app.example.ao", "https://app.example.ao/", "https://app.example.ao/x",
		"ftp://x", "https://u:p@x.ao", "https://x.ao?a=1", "null", "https://a.ao,*"} {
		if got, err := ParseOrigins(in); err == nil {
			t.Errorf("ParseOrigins(%q) = %v, want an error", in, got)
		}
	}
}

// ParseHosts reads names in their canonical form (lower case, no final
// dot) and refuses ports, wildcards, spaces and schemes.
func TestParseHosts(t *testing.T) {
	names, err := ParseHosts(" gw-admin.internal , Invoicing-Gateway-Admin.svc. ,")
	if err != nil || !slices.Equal(names, []string{"gw-admin.internal", "invoicing-gateway-admin.svc"}) {
		t.Errorf("ParseHosts = %v, %v", names, err)
	}
	for _, bad := range []string{"gw-admin.internal:8081", "*.internal", "gw admin", "-gw.internal", "http://gw"} {
		if _, err := ParseHosts(bad); err == nil {
			t.Errorf("ParseHosts(%q) accepted", bad)
		}
	}
}
