package main

import (
	"os"
	"os/user"
)

// commandActor names who runs a management command in the audit log: the
// operating system's user and host, "user@host" (the admin API's callers
// name theirs in X-Actor).
func commandActor() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return name + "@" + host
}
