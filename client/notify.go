package client

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// notified hands a notification to the watches of its key. It runs on
// paho's goroutine.
func (c *Client) notified(p *paho.Publish) {
	key, err := hex.DecodeString(p.Topic[len(c.notifyPrefix):])
	if err != nil {
		c.log.Warn("notification with a malformed topic", "topic", p.Topic)
		return
	}
	e, err := parseNotification(p)
	if err != nil {
		c.log.Warn("malformed notification", "topic", p.Topic, "err", err)
		return
	}
	e.Key = string(key)
	for i, w := range c.watchersOf(e.Key) {
		if i > 0 && e.Value != nil {
			// Each watch gets its own copy, which its reader may keep.
			e.Value = bytes.Clone(e.Value)
		}
		w.notify(e)
	}
}

// parseNotification decodes the payload and version of a notification
// (PROTOCOL.md section 8): NOTIFY SET VALUE <value>, or NOTIFY DELETE.
func parseNotification(p *paho.Publish) (Event, error) {
	var e Event
	args, err := resp.ParseArray(p.Payload, nil)
	if err != nil {
		return e, fmt.Errorf("%w: payload %.64q", ErrBadResponse, p.Payload)
	}
	switch {
	case len(args) == 4 && bytes.Equal(args[0], []byte("NOTIFY")) && bytes.Equal(args[1], []byte("SET")) && bytes.Equal(args[2], []byte("VALUE")):
		e.Op, e.Value = OpSet, args[3]
	case len(args) == 2 && bytes.Equal(args[0], []byte("NOTIFY")) && (bytes.Equal(args[1], []byte("DELETE")) || bytes.Equal(args[1], []byte("DEL"))):
		// The article names the operation DEL; servers send DELETE.
		e.Op = OpDelete
	default:
		return e, fmt.Errorf("%w: notification %.64q", ErrBadResponse, p.Payload)
	}
	if p.Properties != nil {
		for _, u := range p.Properties.User {
			if u.Key == wire.PropTimestamp {
				if e.Version, err = hlc.Parse(u.Value); err != nil {
					return e, fmt.Errorf("%w: version %q", ErrBadResponse, u.Value)
				}
			}
		}
	}
	return e, nil
}
