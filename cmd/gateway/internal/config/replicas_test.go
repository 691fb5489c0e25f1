package config

import (
	"strings"
	"testing"
)

func TestReplicaSettings(t *testing.T) {
	base := map[string]string{
		"GATEWAY_LIVE_DATABASE_URL": "postgres://db/live", "GATEWAY_TEST_DATABASE_URL": "postgres://db/sandbox", "GATEWAY_HISTORY_DATABASE_URL": "postgres://db/gateway",
	}
	for _, tc := range []struct {
		env  map[string]string
		want string // "" = valid, else the setting named in the error
	}{
		{map[string]string{}, ""},
		{map[string]string{"GATEWAY_LIVE_REPLICA_URL": "postgres://replica/live", "GATEWAY_TEST_REPLICA_URL": "postgres://replica/sandbox"}, ""},
		{map[string]string{"GATEWAY_LIVE_REPLICA_URL": "mysql://replica/live"}, "GATEWAY_LIVE_REPLICA_URL"},
		{map[string]string{"GATEWAY_TEST_REPLICA_URL": "sqlite:/tmp/x.db"}, "GATEWAY_TEST_REPLICA_URL"},
		{map[string]string{"GATEWAY_TEST_REPLICA_URL": "postgres://db/live"}, "GATEWAY_TEST_REPLICA_URL"},
		{map[string]string{"GATEWAY_LIVE_REPLICA_URL": "postgres://r/x", "GATEWAY_TEST_REPLICA_URL": "postgres://r/x"}, "GATEWAY_TEST_REPLICA_URL"},
		{map[string]string{"GATEWAY_READ_YOUR_WRITES_WINDOW": "-1s"}, "GATEWAY_READ_YOUR_WRITES_WINDOW"},
	} {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range tc.env {
			env[k] = v
		}
		cfg, err := Load("", envOf(env), NeedAll)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v does not name %s", tc.env, err, tc.want)
		case tc.want == "" && (cfg.ReplicaOf("LiveDatabaseURL") != tc.env["GATEWAY_LIVE_REPLICA_URL"] || cfg.ReplicaOf("TestDatabaseURL") != tc.env["GATEWAY_TEST_REPLICA_URL"]):
			t.Errorf("%v: replicas %q %q", tc.env, cfg.LiveReplicaURL, cfg.TestReplicaURL)
		}
	}
}
