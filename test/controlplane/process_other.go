//go:build !linux

package controlplane

import "syscall"

// sysProcAttr has no parent-death signal outside Linux: there, components of a test
// binary that dies without calling Stop keep running until killed.
func sysProcAttr() *syscall.SysProcAttr { return nil }
