package service

import (
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/store"
)

// NotificationPayload returns the payload of the notification of c:
// NOTIFY SET VALUE <value>, or NOTIFY DELETE. Its __ts is c.Version.
func NotificationPayload(c *store.Change) []byte {
	if c.Deleted {
		return resp.AppendArray(nil, []byte("NOTIFY"), []byte("DELETE"))
	}
	return resp.AppendArray(make([]byte, 0, len(c.Value)+48), []byte("NOTIFY"), []byte("SET"), []byte("VALUE"), c.Value)
}
