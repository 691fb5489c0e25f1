// Package doctest holds the checks of what the repository tells and ships
// against the gateway itself: the README's and docs/' command lines, cited
// tests and paths, metrics and table of faults, and deploy/'s Dockerfile,
// compose stack, Kubernetes manifests, dashboard, alerts and scrape and
// collector configurations. They read the gateway's settings from its
// configuration package and run the built binary (its help, its commands,
// and one `gateway demo`, whose health paths and /metrics the deploy files
// point at), never copies of them that could drift. It has no code besides
// its tests.
package doctest
