package auth

import (
	"encoding/hex"
	"strings"

	"github.com/dssio/dss/internal/wire"
)

// Isolation keeps the topics of one client to that client, whatever a
// policy says, once clients authenticate. A client's topics are those
// under clients/{its id}/ and clients/{HEX(its id)}/ (the response topics
// the protocol recommends and the vendor's clients use), and its
// notification topics, under the state store's reserved prefix and
// HEX(its id). Under isolation a client may subscribe to and receive
// its own topics and nobody else's, and publishes under clients/ at all
// are refused: only the state store publishes there, and only to the
// client a response or notification belongs to.
type Isolation struct {
	raw    string // "clients/{id}/", "" when the id cannot be a level
	hex    string // "clients/{HEX(id)}/"
	notify string // the reserved prefix, "/{HEX(id)}/"
}

// NewIsolation returns the isolation of client id.
func NewIsolation(id string) Isolation {
	h := strings.ToUpper(hex.EncodeToString([]byte(id)))
	i := Isolation{hex: "clients/" + h + "/", notify: wire.ReservedPrefix + "/" + h + "/"}
	// An id that is not one literal level, or that would claim the
	// reserved prefix ("statestore"), has no raw namespace: the hex one
	// always works.
	if id != "" && !strings.ContainsAny(id, "/+#\x00") && id != reservedLevel {
		i.raw = "clients/" + id + "/"
	}
	return i
}

// reservedLevel is the second level of the reserved prefix.
const reservedLevel = "statestore"

// Class says whose a topic or filter is.
type Class int

const (
	// Outside is a topic outside clients/ (or a filter that starts with a
	// wildcard): the policy decides; deliveries are checked by topic.
	Outside Class = iota
	// Own is under the client's own namespaces.
	Own
	// Foreign is anything else under clients/: another client's, the
	// namespace as a whole, or the reserved prefix beyond one's own.
	Foreign
)

// Class returns whose x, a topic or a filter, is. A shared subscription
// ($share/GROUP/FILTER) is judged by its FILTER.
func (i *Isolation) Class(x string) Class {
	x = SharedFilter(x)
	if !strings.HasPrefix(x, "clients") {
		return Outside
	}
	rest := x[len("clients"):]
	if rest != "" && rest[0] != '/' {
		return Outside // "clientsX/..."
	}
	switch {
	case underDir(x, i.notify):
		return Own
	case underDir(x, "clients/"+reservedLevel+"/"), x == "clients/"+reservedLevel:
		return Foreign
	case i.raw != "" && underDir(x, i.raw), underDir(x, i.hex):
		return Own
	}
	return Foreign
}

// underDir reports whether x is dir (which ends in '/') without its
// slash, or below it.
func underDir(x, dir string) bool {
	return strings.HasPrefix(x, dir) || x == dir[:len(dir)-1]
}

// MayPublish reports whether isolation lets a client publish on topic:
// not under clients/.
func (i *Isolation) MayPublish(topic string) bool { return i.Class(topic) == Outside }
