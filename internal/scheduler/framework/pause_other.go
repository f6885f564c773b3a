//go:build !amd64

package framework

// pause is a no-op where the spin-wait hint is not wired up.
func pause(uint32) {}
