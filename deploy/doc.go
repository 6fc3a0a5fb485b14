// Package deploy holds Bindery's deployment artifacts (Dockerfile,
// docker-compose.yml, systemd units, install.sh) and the tests that parse
// and verify them. It has no code of its own: the tests prove that the
// artifacts say what docs/OPERATIONS.md promises (hardening, a shared local
// /state, a read-only library, health-gated start order, stop timeouts
// longer than workerd's shutdown grace) and that the tools that consume
// them (systemd-analyze, docker-compose) accept them.
package deploy
