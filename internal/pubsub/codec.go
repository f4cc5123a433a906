package pubsub

import (
	"errors"

	"github.com/dssio/dss/internal/bincode"
)

// ErrMalformed is returned for bytes that are not a command or a state
// this package wrote.
var ErrMalformed = errors.New("pubsub: malformed encoding")

// decoder reads what this package wrote (bincode, failing with
// ErrMalformed).
type decoder = bincode.Decoder

func newDecoder(b []byte) decoder { return bincode.NewDecoder(b, ErrMalformed) }
