//go:build !linux

package main

import "syscall"

// takeTerminal does nothing where process groups are not managed here.
func takeTerminal() (restore func()) { return func() {} }

// agentProcAttr leaves the agent's process attributes as they are.
func agentProcAttr() *syscall.SysProcAttr { return nil }
