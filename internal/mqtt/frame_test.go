// SPDX-License-Identifier: MIT

package mqtt

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"time"
)

// readFrame reads one packet from a connection the test speaks MQTT on
// by hand, within wait: its first byte (type and flags) and its body.
func readFrame(conn net.Conn, r *bufio.Reader, wait time.Duration) (first byte, body []byte, err error) {
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	if first, err = r.ReadByte(); err != nil {
		return 0, nil, err
	}
	n, err := binary.ReadUvarint(r) // a Variable Byte Integer is a uvarint
	if err != nil {
		return 0, nil, err
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return first, body, nil
}
