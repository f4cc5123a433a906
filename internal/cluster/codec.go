package cluster

import (
	"errors"

	"github.com/dssio/dss/internal/bincode"
)

var errShort = errors.New("cluster: malformed encoding")

// decoder reads what this package wrote (bincode, failing with
// errShort).
type decoder = bincode.Decoder

func newDecoder(b []byte) decoder { return bincode.NewDecoder(b, errShort) }
