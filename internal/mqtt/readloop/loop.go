package readloop

import (
	"sync"
	"syscall"
	"time"
)

// A Handler is what a Loop calls for the connections it reads, of type
// C; all three on the loop's goroutine, Left also on Close's.
type Handler[C any] interface {
	// Turn is c's turn: its descriptor has data, or its peer closed.
	// now is Now() at the start of the round. It returns nil to stay in
	// the loop, or an error to leave it, which Left then gets.
	Turn(c C, now int64) error
	// Left hands c back to its owner, which the loop no longer reads:
	// with the error of its turn, or nil when the loop closed. It is
	// called with the loop's lock held and must not wait for the loop.
	Left(c C, err error)
	// RoundDone runs after each round of turns.
	RoundDone()
}

// A Member is what a connection shares with the loop that reads it;
// each connection has one, the zero value ready.
type Member struct {
	mu    sync.Mutex // held by the loop during a turn, and to add or take back the connection
	raw   syscall.RawConn
	fd    int  // the connection's descriptor, while added
	added bool // the loop reads the connection (under mu)
}

// monoEpoch is when the process started, as the monotonic clock reads it.
var monoEpoch = time.Now()

// Now reads the monotonic clock, in nanoseconds since the process
// started: a connection's idle time measured with it, as the runtime
// measures a read deadline, does not move with a step of the wall clock
// (a time sync).
func Now() int64 { return int64(time.Since(monoEpoch)) }

// WithoutTurn runs f while no turn of m's connection is under way and
// none can start, with inLoop reporting whether a loop reads the
// connection: for the owner to look at what a turn changes.
func (m *Member) WithoutTurn(f func(inLoop bool)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m.added)
}
