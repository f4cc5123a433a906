package cli

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/dssio/dss/internal/server"
)

// reloadOnHangup makes SIGHUP reload the server's users, policy and
// certificate files until the returned function is called.
func reloadOnHangup(srv *server.Server) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-ch:
				_ = srv.Reload() // it logs what it could not read
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
		<-exited
	}
}
