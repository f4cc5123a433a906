// SPDX-License-Identifier: MIT

//go:build !amd64

package mqtt

func prefetch(addr, n uintptr) {}
