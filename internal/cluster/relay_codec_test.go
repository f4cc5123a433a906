package cluster

import (
	"bufio"
	"bytes"
	"testing"
)

// A frame of messages and pings decodes to what was encoded.
func TestRelayItemsRoundTrip(t *testing.T) {
	var f frame
	f.reset()
	f.buf = appendRelayMessage(f.buf, &relayItem{seq: 7, qos: 1, groups: []string{"$share/g/a"}, msg: []byte("m")}, 1500)
	f.buf = append(f.buf, relayPing)
	f.count = 2
	d, n, err := readFrame(bufio.NewReader(bytes.NewReader(f.bytes())))
	if err != nil || n != 2 {
		t.Fatalf("frame: %v, %d items", err, n)
	}
	m, ping := decodeRelayItem(d)
	if ping || m.seq != 7 || m.qos != 1 || m.left != 1500 || len(m.groups) != 1 || m.groups[0] != "$share/g/a" || string(m.msg) != "m" {
		t.Fatalf("message %+v", m)
	}
	if _, ping := decodeRelayItem(d); !ping || d.Err() != nil {
		t.Fatal("no ping")
	}
	h, err := readRelayHeader(bufio.NewReader(bytes.NewReader(appendRelayHeader(nil, relayHeader{node: "n2", epoch: 9}))))
	if err != nil || h.node != "n2" || h.epoch != 9 {
		t.Fatalf("header %+v %v", h, err)
	}
}

// The receiver's decoding refuses damage and never panics on it.
func FuzzRelayItems(f *testing.F) {
	var f0 frame
	f0.reset()
	f0.buf = appendRelayMessage(f0.buf, &relayItem{seq: 1, groups: []string{"g"}, msg: []byte("x")}, 0)
	f0.count = 1
	f.Add(f0.bytes())
	f.Add(appendRelayHeader(nil, relayHeader{node: "n1", epoch: 1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		br := bufio.NewReader(bytes.NewReader(b))
		if d, n, err := readFrame(br); err == nil {
			for range n {
				decodeRelayItem(d)
				if d.Err() != nil {
					break
				}
			}
		}
		_, _ = readRelayHeader(bufio.NewReader(bytes.NewReader(b)))
	})
}
