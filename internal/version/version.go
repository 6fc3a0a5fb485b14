// Package version carries the build's version, stamped with -ldflags.
package version

// Version is set at build time: -ldflags "-X github.com/bindery-nas/bindery/internal/version.Version=v1.2.3".
var Version = "dev"
