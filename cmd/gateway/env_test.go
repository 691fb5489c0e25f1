package main

// envOf is an environment of m's variables. The tests' gateways seal
// webhook signing secrets with testSecretsKey unless m sets
// GATEWAY_WEBHOOK_SECRETS_KEY (to "" for none).
func envOf(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok || k != "GATEWAY_WEBHOOK_SECRETS_KEY" {
			return v
		}
		return testSecretsKey
	}
}
