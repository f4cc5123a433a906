//go:build !unix

package rawio

import "net"

// Wrap returns c: off Unix, reads and writes go through package net.
func Wrap(c net.Conn) net.Conn { return c }
