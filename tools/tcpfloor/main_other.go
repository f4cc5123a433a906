//go:build !linux

// Command tcpfloor measures what the kernel costs a request/response
// server; it uses epoll, so it runs on Linux only.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "tcpfloor: Linux only (epoll)")
	os.Exit(1)
}
